"""Applying events: monotone transitions, order independence (property), SMS and voice."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from scheduler.ledger.db import make_engine, open_ledger
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.databases import LedgerUrls
from tests.factories import T0, make_run, number
from tests.tracking.support import (
    accepted_run,
    mid,
    receipt,
    received,
    rows,
    sent,
    sms,
    table,
    voice,
)

CTX = ApplyContext(OptOutWords(["SAIR", "PARAR", "STOP"]))
NOW = T0 + timedelta(hours=1)


def ingest(ledger: Ledger, events: list[dict[str, Any]], *, batch: int = 1) -> None:
    """Store and apply ``events`` as the receiver does, ``batch`` per transaction."""
    items = [incoming_from(e, json.dumps(e), NOW) for e in events]
    for start in range(0, len(items), batch):
        store_and_apply(TrackingStore(ledger), items[start:start + batch], CTX, NOW)


def dispatching(ledger: Ledger, run_id: int, to: str, *, state: str = "dispatching") -> int:
    """Leave ``to``'s first step as a crash would: claimed, no message id."""
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        conn.execute(update(d).where(d.c.run_id == run_id, d.c.to == to, d.c.step == 0)
                     .values(state=state, sender="s1", dispatched_at=T0, message_id=None,
                             message_id_norm=None, accepted_at=None))
    return next(r["id"] for r in rows(ledger, run_id) if r["to"] == to and r["step"] == 0)


# --------------------------------------------------------------------------- monotone


def test_read_before_delivered_ends_read_with_both_times(tledger: Ledger) -> None:
    run_id = accepted_run(tledger, 1)
    t_sent, t_del, t_read = T0, T0 + timedelta(seconds=5), T0 + timedelta(seconds=50)
    ingest(tledger, [receipt("message.read", number(0), mid(0), t_read)])
    [row] = rows(tledger, run_id)
    assert row["state"] == "read"
    assert row["read_at"] == t_read and row["delivered_at"] == t_read  # implied
    ingest(tledger, [receipt("message.delivered", number(0), mid(0), t_del),
                     sent(number(0), mid(0), t_sent)])
    [row] = rows(tledger, run_id)
    assert row["state"] == "read"  # never back
    assert (row["sent_at"], row["delivered_at"], row["read_at"]) == (t_sent, t_del, t_read)


def test_message_ids_match_in_any_letter_case(tledger: Ledger) -> None:
    run_id = accepted_run(tledger, 2)
    ingest(tledger, [sent(number(0), mid(0).upper()), sent(number(1), mid(1).lower())])
    assert [r["state"] for r in rows(tledger, run_id)] == ["sent", "sent"]


def test_events_never_touch_rows_outside_the_tracking_states(tledger: Ledger) -> None:
    run_id = accepted_run(tledger, 1)
    d = tables.deliveries
    with tledger.engine.begin() as conn:
        conn.execute(update(d).where(d.c.run_id == run_id).values(state="failed"))
    ingest(tledger, [sent(number(0), mid(0)), receipt("message.read", number(0), mid(0), T0)])
    [row] = rows(tledger, run_id)
    assert row["state"] == "failed" and row["read_at"] is None


def test_an_albums_several_events_close_one_delivery(tledger: Ledger) -> None:
    run_id = make_run(tledger, 1, steps=2)
    d = tables.deliveries
    with tledger.engine.begin() as conn:  # step 0 is an album, accepted; step 1 in flight
        conn.execute(update(d).where(d.c.run_id == run_id, d.c.step == 0).values(
            kind="album", state="accepted", sender="s1", dispatched_at=T0,
            message_id=mid(0).lower(), message_id_norm=mid(0).lower()))
        conn.execute(update(d).where(d.c.run_id == run_id, d.c.step == 1).values(
            state="dispatching", sender="s1", dispatched_at=T0 + timedelta(seconds=1)))
    album = [sent(number(0), m, T0, kind=kind) for m, kind in
             ((mid(0), "image"), ("3EB0SIBLING1", "video"), ("3EB0SIBLING2", "image"))]
    ingest(tledger, album[::-1])
    first, second = rows(tledger, run_id)
    assert first["state"] == "sent" and first["sent_at"] == T0
    assert second["state"] == "dispatching"  # an image never proves a text was sent
    events = {e["message_id_norm"]: e["result"] for e in table(tledger, "events")}
    assert events[mid(0).lower()] == "sent"
    assert events["3eb0sibling1"] == events["3eb0sibling2"] == "unmatched"


# --------------------------------------------------------------------------- order (property)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, ledger_urls: LedgerUrls) -> str:
    """A migrated ledger with a run: 4 accepted recipients × 2 steps, and one crashed row."""
    url = ledger_urls.new(tmp_path_factory.mktemp("template"), lasting=True)
    engine = open_ledger(url)
    ledger = Ledger(engine)
    run_id = accepted_run(ledger, 5, steps=2)
    dispatching(ledger, run_id, number(4))
    engine.dispose()
    return url


def _stream() -> list[dict[str, Any]]:
    """Every event of the run in the order the service would send them."""
    events: list[dict[str, Any]] = []
    for i in range(5):
        t = T0 + timedelta(seconds=i)
        message = mid(i) if i < 4 else "3EB0CRASHED0000000001"  # the crashed row's id
        events.append(sent(number(i), message, t))
        events.append(receipt("message.delivered", number(i), message, t + timedelta(seconds=3)))
        if i % 2 == 0:
            events.append(receipt("message.read", number(i), message, t + timedelta(seconds=9)))
    events.append(received(number(1), "Quanto custa?", T0 + timedelta(minutes=2)))
    events.append(received(number(1), "Ainda tem?", T0 + timedelta(minutes=3)))
    events.append(received(number(2), "  Parar! ", T0 + timedelta(minutes=4)))
    events.append(received(number(3), "Sou eu", T0 + timedelta(minutes=5), kind="poll_update",
                           data={"poll_message_id": mid(3), "selected_options": ["Sim"]}))
    events.append({"event": "labels.edit", "sessionId": "s1", "data": {"label_id": 1}})
    return events


def _final(url: str) -> dict[str, Any]:
    engine = make_engine(url)
    ledger = Ledger(engine)
    keep = ("id", "state", "reason", "message_id_norm", "sent_at", "delivered_at", "read_at",
            "replied_at", "reply_text")
    try:
        return {
            "deliveries": [{k: r[k] for k in keep} for r in rows(ledger)],
            "replies": sorted((r["number"], r["delivery_id"], r["kind"], r["text"],
                               r["opt_out"]) for r in table(ledger, "replies")),
            "suppressions": sorted((s["number"], s["source"])
                                   for s in table(ledger, "suppressions")),
            "events": len(table(ledger, "events")),
        }
    finally:
        engine.dispose()


def _play(url: str, events: list[dict[str, Any]], batch: int) -> dict:
    engine = make_engine(url)  # a copy of the template: already migrated
    try:
        ingest(Ledger(engine), events, batch=batch)
    finally:
        engine.dispose()
    return _final(url)


@pytest.fixture(scope="module")
def expected(template: str, tmp_path_factory: pytest.TempPathFactory,
             ledger_urls: LedgerUrls) -> dict[str, Any]:
    """The final ledger of the ordered stream, one event per transaction."""
    url = ledger_urls.new(tmp_path_factory.mktemp("ordered"), copy_of=template, lasting=True)
    return _play(url, _stream(), batch=1)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), repeats=st.lists(st.integers(0, 24), max_size=12),
       batch=st.integers(1, 12))
def test_a_shuffled_duplicated_stream_gives_the_same_ledger(
        template: str, expected: dict[str, Any], make_ledger_url: Callable[..., str],
        seed: int, repeats: list[int], batch: int) -> None:
    ordered = _stream()
    messy = ordered + [ordered[i % len(ordered)] for i in repeats]
    random.Random(seed).shuffle(messy)
    url = make_ledger_url(f"ledger-{random.random()}", copy_of=template)
    assert _play(url, messy, batch=batch) == expected


def test_the_ordered_stream_gives_the_expected_ledger(expected: dict[str, Any]) -> None:
    final = expected
    steps0 = [d for d in final["deliveries"] if d["id"] % 2 == 1]
    assert [d["state"] for d in steps0] == ["read", "delivered", "read", "delivered", "read"]
    assert steps0[4]["message_id_norm"] == "3eb0crashed0000000001"  # proved by its event
    assert steps0[1]["reply_text"] == "Quanto custa?"  # the first reply's text
    assert final["suppressions"] == [(number(2), "reply")]
    later = {d["id"]: d for d in final["deliveries"] if d["id"] % 2 == 0}
    assert later[6]["state"] == "skipped" and later[6]["reason"] == "opted_out"
    assert [d["state"] for k, d in sorted(later.items()) if k != 6] == ["planned"] * 4
    assert ("5511900000003", 7, "poll_update", "Sim", False) in final["replies"]
    assert final["events"] == len(_stream())


# --------------------------------------------------------------------------- SMS and voice


def test_sms_reports_move_sms_deliveries(tledger: Ledger) -> None:
    run_id = accepted_run(tledger, 3)
    ingest(tledger, [sms("sms.delivered", mid(0), number(0)),
                     sms("sms.undelivered", mid(1), number(1), errorCode="NO_COVERAGE"),
                     sms("sms.undelivered", mid(2), number(2)),
                     sms("sms.delivered", mid(2), number(2), T0 + timedelta(seconds=9))])
    states = [(r["state"], r["delivered_at"]) for r in rows(tledger, run_id)]
    assert states == [("delivered", T0), ("undelivered", None),
                      ("delivered", T0 + timedelta(seconds=9))]  # delivered beats undelivered


def test_voice_events_move_call_deliveries(tledger: Ledger) -> None:
    run_id = accepted_run(tledger, 3)
    ingest(tledger, [voice("call.started", mid(0), number(0)),
                     voice("call.ended", mid(0), number(0), answered=True, talkSeconds=31),
                     voice("call.started", mid(1), number(1)),
                     voice("call.ended", mid(1), number(1), answered=False, cause=19),
                     voice("call.dtmf", mid(2), number(2), digits="1"),
                     voice("call.ended", mid(2), number(2), answered=None)])
    assert [r["state"] for r in rows(tledger, run_id)] == ["answered", "not_answered",
                                                           "answered"]


def test_account_events_with_no_matching_delivery_are_just_stored(tledger: Ledger) -> None:
    accepted_run(tledger, 1)
    ingest(tledger, [sms("sms.delivered", "nobody", number(9)),
                     voice("call.answered", "no-call", number(9))])
    assert {e["result"] for e in table(tledger, "events")} == {"unmatched"}
    ingest(tledger, [sent(number(0), mid(0)), {"event": "mystery", "data": {}}])
    channels = {e["event"]: (e["channel"], e["session_id"], e["number"])
                for e in table(tledger, "events")}
    assert channels == {"sms.delivered": ("sms", None, number(9)),
                        "call.answered": ("voice", None, number(9)),
                        "messages.sent": ("whatsapp", "s1", number(0)),
                        "mystery": (None, None, None)}


def test_an_event_that_fails_to_apply_stays_stored_and_is_applied_at_the_next_start(
        tledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.tracking import apply as apply_module
    from scheduler.tracking.event_store import apply_unapplied

    run_id = accepted_run(tledger, 2)
    real = apply_module.reply_text

    def broken(data: Any) -> Any:  # a bug that only this reply triggers
        if data.message == "boom":
            raise RuntimeError("bug in reply handling")
        return real(data)

    monkeypatch.setattr(apply_module, "reply_text", broken)
    ingest(tledger, [sent(number(0), mid(0)), received(number(1), "boom"),
                     receipt("message.read", number(1), mid(1), T0)], batch=3)
    assert [r["state"] for r in rows(tledger, run_id)] == ["sent", "read"]
    events = {e["event"]: e for e in table(tledger, "events")}
    failed = events["messages.received"]
    assert failed["applied_at"] is None and failed["result"].startswith("error: RuntimeError")
    assert table(tledger, "replies") == []
    monkeypatch.setattr(apply_module, "reply_text", real)  # fixed and restarted
    count, _ = apply_unapplied(TrackingStore(tledger), CTX, NOW)
    assert count == 1
    assert [r["text"] for r in table(tledger, "replies")] == ["boom"]
    assert rows(tledger, run_id)[1]["reply_text"] == "boom"
