"""Replies: recorded against the latest delivery, reply kinds, opt-out words."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import DEFAULT_OPT_OUT_WORDS
from scheduler.tracking.replies import OptOutWords, fold
from tests.factories import T0, number
from tests.tracking.support import accepted_run, received, rows, table

WORDS = OptOutWords(DEFAULT_OPT_OUT_WORDS)


@pytest.mark.parametrize("text", ["SAIR", "sair", "Sair", "Parar!", "  stop. ", "STOP",
                                  "Descadastrár", "cancelar!!", "«Sair»", "SAIR 🙏",
                                  "unsubscribe", "Parar\n"])
def test_opt_out_words_match_as_the_whole_message(text: str) -> None:
    assert WORDS.matches(text)


@pytest.mark.parametrize("text", ["não quero sair de casa", "stop please call me", "sairá",
                                  "", None, "ok", "S A I R", "stopp"])
def test_other_replies_are_not_opt_outs(text: str | None) -> None:
    assert not WORDS.matches(text)


def test_fold_ignores_case_accents_and_surrounding_punctuation() -> None:
    assert fold("  Ação   IMEDIATA!! ") == "acao imediata"
    assert OptOutWords(["não quero"]).matches("NAO QUERO.")


def test_a_reply_goes_to_the_recipients_latest_delivery(tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 2, steps=2)
    d = tables.deliveries
    later = T0 + timedelta(minutes=10)
    with tledger.engine.begin() as conn:  # recipient 0's second step went out later
        conn.execute(update(d).where(d.c.run_id == run_id, d.c.to == number(0),
                                     d.c.step == 1).values(
            state="accepted", sender="s1", dispatched_at=later, message_id="m2",
            message_id_norm="m2"))
    receiver = make_receiver(tledger)
    receiver.post(received(number(0), "Sobre a primeira", T0 + timedelta(minutes=5)))
    receiver.post(received(number(0), "Sobre a segunda", later + timedelta(minutes=1)))
    receiver.post(received(number(0), "Tenho interesse", later + timedelta(minutes=2)))
    by_id = {r["id"]: r for r in rows(tledger, run_id)}
    assert by_id[1]["reply_text"] == "Sobre a primeira"
    assert by_id[2]["reply_text"] == "Sobre a segunda"  # the first reply's text is kept
    assert by_id[2]["replied_at"] == later + timedelta(minutes=1)
    replies = sorted((r["delivery_id"], r["run_id"], r["text"]) for r in table(tledger,
                                                                               "replies"))
    assert replies == [(1, run_id, "Sobre a primeira"), (2, run_id, "Sobre a segunda"),
                       (2, run_id, "Tenho interesse")]


def test_poll_votes_list_rows_and_buttons_are_replies(tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 3)
    receiver = make_receiver(tledger)
    receiver.post(received(number(0), "Sim, Talvez", kind="poll_update",
                           data={"poll_message_id": "x", "selected_options": ["Sim", "Talvez"]}))
    receiver.post(received(number(1), "Plano anual", kind="list_response",
                           data={"list_message_id": "y", "row_id": "r2",
                                 "title": "Plano anual", "description": ""}))
    receiver.post(received(number(2), "", kind="template_button_reply",
                           data={"selected_id": "b1", "selected_display_text": "Parar"}))
    got = {r["number"]: (r["kind"], r["text"], r["opt_out"]) for r in table(tledger, "replies")}
    assert got == {number(0): ("poll_update", "Sim, Talvez", False),
                   number(1): ("list_response", "Plano anual", False),
                   number(2): ("template_button_reply", "Parar", True)}
    assert [r["reply_text"] for r in rows(tledger, run_id)] == ["Sim, Talvez", "Plano anual",
                                                                "Parar"]
    assert [s["number"] for s in table(tledger, "suppressions")] == [number(2)]


def test_an_opt_out_reply_suppresses_the_number_and_skips_what_is_pending(
        tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 2, steps=3)
    receiver = make_receiver(tledger)
    receiver.post(received(number(0), "Parar!"))
    receiver.post(received(number(0), "SAIR"))  # twice: still one suppression
    [suppression] = table(tledger, "suppressions")
    assert (suppression["number"], suppression["source"]) == (number(0), "reply")
    states = [(r["to"], r["step"], r["state"], r["reason"]) for r in rows(tledger, run_id)]
    assert states == [
        (number(0), 0, "accepted", None), (number(0), 1, "skipped", "opted_out"),
        (number(0), 2, "skipped", "opted_out"),
        (number(1), 0, "accepted", None), (number(1), 1, "planned", None),
        (number(1), 2, "planned", None)]
    assert all(r["opt_out"] for r in table(tledger, "replies"))
    assert "opted out" in table(tledger, "events")[0]["result"]


def test_messages_that_are_not_replies_are_ignored(tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 1)
    receiver = make_receiver(tledger)
    receiver.post(received(number(0), "SAIR", is_group=True))
    receiver.post(received(number(0), "sent from the phone", fromMe=True))
    receiver.post(received("123456789@lid", "SAIR"))
    assert table(tledger, "replies") == [] and table(tledger, "suppressions") == []
    assert [r["replied_at"] for r in rows(tledger, run_id)] == [None]
    assert sorted(e["result"] for e in table(tledger, "events")) == [
        "ignored: group message", "ignored: the sender is not a phone number (@lid)",
        "ignored: written on the session's own phone"]


def test_a_reply_from_a_number_never_messaged_is_kept(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    receiver.post(received("5521999990000", "Quem é?"))
    [reply] = table(tledger, "replies")
    assert reply["delivery_id"] is None and reply["text"] == "Quem é?"


def test_a_reply_quoting_an_older_message_counts_for_that_message(
        tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 2, steps=2)
    d = tables.deliveries
    later = T0 + timedelta(minutes=10)
    with tledger.engine.begin() as conn:  # recipient 0's second step went out later
        conn.execute(update(d).where(d.c.run_id == run_id, d.c.to == number(0),
                                     d.c.step == 1).values(
            state="accepted", sender="s1", dispatched_at=later, message_id="m2",
            message_id_norm="m2"))
    first = next(r for r in rows(tledger, run_id) if r["to"] == number(0) and r["step"] == 0)
    receiver = make_receiver(tledger)
    # after the second message, the recipient quotes the first one (upper case, as seen)
    receiver.post(received(number(0), "Quero esse plano", later + timedelta(minutes=1),
                           contextInfo={"stanzaId": first["message_id"].upper()}))
    # a vote names its poll, a list choice its list: the same rule
    receiver.post(received(number(0), "", later + timedelta(minutes=2), kind="poll_update",
                           data={"poll_message_id": "M2", "selected_options": ["Sim"]}))
    by_id = {r["id"]: r for r in rows(tledger, run_id)}
    assert by_id[first["id"]]["reply_text"] == "Quero esse plano"
    second = next(r for r in by_id.values() if r["to"] == number(0) and r["step"] == 1)
    assert second["reply_text"] == "Sim"
    replies = sorted((r["delivery_id"], r["text"]) for r in table(tledger, "replies"))
    assert replies == sorted([(first["id"], "Quero esse plano"), (second["id"], "Sim")])


def test_a_quote_of_a_message_to_another_number_falls_back_to_the_latest(
        tledger: Ledger, make_receiver) -> None:
    run_id = accepted_run(tledger, 2)
    other = next(r for r in rows(tledger, run_id) if r["to"] == number(1))
    receiver = make_receiver(tledger)
    receiver.post(received(number(0), "Oi", contextInfo={"stanzaId": other["message_id"]}))
    mine = next(r for r in rows(tledger, run_id) if r["to"] == number(0))
    assert mine["reply_text"] == "Oi"
    assert next(r for r in rows(tledger, run_id) if r["to"] == number(1))["reply_text"] is None
