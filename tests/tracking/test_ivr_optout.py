"""A voice campaign's ``[recipients] opt_out_digit``: a call whose keys include it puts the
number on the one suppression list (source ``ivr``), its pending deliveries are skipped,
and a later run skips it; other keys, and campaigns without the key, change nothing."""

from __future__ import annotations

import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.loader import load_campaign
from scheduler.core.timeutil import utcnow
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.service.account_models import voice_key
from scheduler.usecases.planning import plan_run
from tests.factories import number
from tests.tracking.support import ReceiverHandle, rows, table, voice, wait_until

BULK = "bulk_5e1f0c2a9b7d3e41"
CSV = "nome;telefone\n" + "".join(f"Cliente {i};+{number(i)}\n" for i in range(3))


def _project(root: Path, extra: str = 'opt_out_digit = "9"', channel: str = "voice") -> Path:
    """A project with one two-step voice survey of three recipients; its campaign file."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "v.csv").write_text(CSV, encoding="utf-8")
    step = ('flowId = "flow-pesquisa"\nvariables = { nome = "{{ nome }}" }' if channel == "voice"
            else 'text = "Oi {{ nome }}"')  # fmt: skip
    path = root / "campaigns" / "survey.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(f"""\
        name = "pesquisa"
        channel = "{channel}"

        [recipients]
        file = "data/v.csv"
        phone_column = "telefone"
        {extra}

        [[steps]]
        {step}

        [[steps]]
        delay = "1d"
        {step}
        """), encoding="utf-8")  # fmt: skip
    return path


def _dialled(ledger: Ledger, run_id: int) -> None:
    """The first step of every recipient taken in one ``voice/bulk`` call, as the dispatcher
    leaves it (each row holds ``BULKID:NUMBER``)."""
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        for i in range(3):
            key = voice_key(BULK, number(i))
            conn.execute(update(d).where(d.c.run_id == run_id, d.c.to == number(i),
                                         d.c.step == 0)
                         .values(state="accepted", sender="account", message_id=key,
                                 message_id_norm=key, dispatched_at=utcnow(),
                                 accepted_at=utcnow()))  # fmt: skip


def _call(i: int, keys: str) -> list[dict[str, Any]]:
    """Recipient ``i`` answers and presses ``keys`` one by one; the call ends."""
    t = utcnow()
    base = {"bulkCallId": BULK}
    events = [voice("call.answered", f"call-{i}", number(i), t, answered=True, **base)]
    events += [voice("call.dtmf", f"call-{i}", number(i), t + timedelta(seconds=n + 1),
                     digits=key, **base) for n, key in enumerate(keys)]  # fmt: skip
    events.append(voice("call.ended", f"call-{i}", number(i), t + timedelta(seconds=30),
                        answered=True, talkSeconds=25, cause=16, **base))  # fmt: skip
    return events


def _post(receiver: ReceiverHandle, events: list[dict[str, Any]]) -> None:
    for event in events:
        assert receiver.post_account(event).status_code == 200


def test_the_opt_out_digit_suppresses_the_number_and_a_later_run_skips_it(
        tledger: Ledger, make_receiver: Any, tmp_path: Path) -> None:  # fmt: skip
    campaign = _project(tmp_path)
    run_id = plan_run(tledger, campaign, start_at=utcnow())
    _dialled(tledger, run_id)
    receiver = make_receiver(tledger)
    _post(receiver, _call(0, "19") + _call(1, "1") + _call(2, ""))
    _post(receiver, _call(0, "19")[1:3])  # repeated keys change nothing
    listed = wait_until(lambda: table(tledger, "suppressions"))
    wait_until(lambda: all(r["state"] == "answered" for r in rows(tledger, run_id)
                           if r["step"] == 0))  # fmt: skip
    assert [(s["number"], s["source"]) for s in table(tledger, "suppressions")] == [
        (number(0), "ivr")
    ]
    assert listed[0]["reason"] == f"pressed 9 in the IVR of run {run_id} (pesquisa)"
    second_step = {r["to"]: (r["state"], r["reason"]) for r in rows(tledger, run_id)
                   if r["step"] == 1}  # fmt: skip
    assert second_step == {number(0): ("skipped", "opted_out"), number(1): ("planned", None),
                           number(2): ("planned", None)}  # fmt: skip
    later = plan_run(tledger, campaign, start_at=utcnow())
    states = {(r["to"], r["step"]): (r["state"], r["reason"]) for r in rows(tledger, later)}
    assert states[(number(0), 0)] == ("skipped", "suppressed")
    assert states[(number(0), 1)] == ("skipped", "suppressed")
    assert states[(number(1), 0)] == ("planned", None)


def test_keys_of_a_campaign_without_an_opt_out_digit_suppress_nothing(
        tledger: Ledger, make_receiver: Any, tmp_path: Path) -> None:  # fmt: skip
    run_id = plan_run(tledger, _project(tmp_path, extra=""), start_at=utcnow())
    _dialled(tledger, run_id)
    receiver = make_receiver(tledger)
    _post(receiver, _call(0, "9") + _call(1, "1"))
    wait_until(
        lambda: [
            r["details"]
            for r in rows(tledger, run_id)
            if r["step"] == 0 and r["details"] and '"digits"' in r["details"]
        ]
    )
    wait_until(lambda: all(r["state"] == "answered" for r in rows(tledger, run_id)
                           if r["step"] == 0 and r["to"] != number(2)))  # fmt: skip
    assert table(tledger, "suppressions") == []


@pytest.mark.parametrize(("extra", "channel", "message"), [
    ('opt_out_digit = "99"', "voice", "expected one phone key"),
    ('opt_out_digit = "a"', "voice", "expected one phone key"),
    ("opt_out_digit = 10", "voice", "expected one phone key"),
    ('opt_out_digit = "9"', "sms", "only a voice campaign"),
])  # fmt: skip
def test_the_opt_out_digit_is_checked(tmp_path: Path, extra: str, channel: str,
                                      message: str) -> None:  # fmt: skip
    with pytest.raises(CampaignError) as caught:
        load_campaign(_project(tmp_path, extra=extra, channel=channel))
    assert message in str(caught.value) and "opt_out_digit" in str(caught.value)


@pytest.mark.parametrize(("extra", "key"), [("opt_out_digit = 9", "9"),
                                            ('opt_out_digit = "#"', "#")])  # fmt: skip
def test_an_opt_out_digit_may_be_a_number_or_a_key(tmp_path: Path, extra: str, key: str) -> None:
    assert load_campaign(_project(tmp_path, extra=extra)).spec.recipients.opt_out_digit == key
