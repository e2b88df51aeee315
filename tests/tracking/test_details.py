"""SMS and voice events fold what they carry into ``deliveries.details``, in any order."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from typing import Any

from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0, number
from tests.tracking.support import accepted_run, mid, rows, sms, voice

CTX = ApplyContext(OptOutWords(["SAIR"]))


def _ingest(ledger: Ledger, events: list[dict[str, Any]]) -> None:
    for event in events:
        store_and_apply(TrackingStore(ledger),
                        [incoming_from(event, json.dumps(event), T0)], CTX, T0)


def _details(ledger: Ledger, run_id: int) -> list[dict[str, Any]]:
    return [json.loads(r["details"]) if r["details"] else {} for r in rows(ledger, run_id)]


def _call(i: int) -> list[dict[str, Any]]:
    t = T0 + timedelta(minutes=i)
    return [voice("call.started", mid(i), number(i), t),
            voice("call.answered", mid(i), number(i), t + timedelta(seconds=5), answered=True),
            voice("call.dtmf", mid(i), number(i), t + timedelta(seconds=9), digits="1"),
            voice("call.dtmf", mid(i), number(i), t + timedelta(seconds=11), digits="3"),
            voice("call.ended", mid(i), number(i), t + timedelta(seconds=40), answered=True,
                  talkSeconds=35, cause=16, causeDescription="NORMAL_CLEARING")]


def test_voice_details_do_not_depend_on_the_order_of_events(make_ledger_url) -> None:
    from scheduler.ledger.db import open_ledger

    finals = []
    for seed in (None, 1, 2, 3):
        engine = open_ledger(make_ledger_url(f"l{seed}"))
        ledger = Ledger(engine)
        run_id = accepted_run(ledger, 1)
        events = _call(0)
        if seed is not None:
            random.Random(seed).shuffle(events)
        _ingest(ledger, events + events[:2])
        finals.append((rows(ledger, run_id)[0]["state"], _details(ledger, run_id)))
        engine.dispose()
    assert finals == [("answered", [{
        "callId": mid(0), "answered": True, "digits": "13", "talkSeconds": 35, "cause": 16,
        "causeDescription": "NORMAL_CLEARING"}])] * 4


def test_an_unanswered_call_and_sms_reports_keep_their_codes(tledger: Ledger) -> None:
    run_id = accepted_run(tledger, 3)
    _ingest(tledger, [
        voice("call.ended", mid(0), number(0), answered=False, cause=19,
              causeDescription="NO_ANSWER"),
        sms("sms.undelivered", mid(1), number(1), errorCode="NO_COVERAGE", segments=2),
        sms("sms.delivered", mid(2), number(2), segments=1),
    ])
    assert [r["state"] for r in rows(tledger, run_id)] == ["not_answered", "undelivered",
                                                           "delivered"]
    assert _details(tledger, run_id) == [
        {"callId": mid(0), "answered": False, "cause": 19, "causeDescription": "NO_ANSWER"},
        {"segments": 2, "errorCode": "NO_COVERAGE"},
        {"segments": 1},
    ]
