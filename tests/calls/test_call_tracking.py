"""Tracking of WhatsApp calls placed by a ``calls`` run: the delivery holding the ``callId``
ends with one outcome whatever order the events come in, repeated or before the call was
recorded, and a row a crash left ``dispatching`` is proven placed by its call events."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler.dispatch import reconcile
from scheduler.dispatch.channel import Channel
from scheduler.dispatch.channels import channel_for
from scheduler.dispatch.store import RunStores
from scheduler.ledger.changes import Changes
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from scheduler.wiring import run_store
from tests.factories import T0, make_run, number
from tests.tracking.support import iso, rows

CTX = ApplyContext(OptOutWords(["SAIR"]))
RECORDING = "https://files.example.com/{call}/full.wav"
#: How much later the connection layer's repeat of an event is stamped.
REPEAT_LAG = timedelta(milliseconds=4)


def _recover(stores: RunStores, channel: Channel, now: datetime, **kw: Any) -> dict[str, int]:
    """Reconciliation as the dispatcher runs it: the run's queue, then tracking's matching."""
    return reconcile.recover_after_crash(stores.queue, channel, now,
                                         match_events=stores.match_events, **kw)



def _event(name: str, call: str, to: str, at: datetime, session: str = "s1",
           **data: Any) -> dict[str, Any]:
    return {"event": name, "sessionId": session, "timestamp": iso(at),
            "data": {"callId": call, **data}}


def call_events(call: str, to: str, *, answered: bool, session: str = "s1"
                ) -> list[dict[str, Any]]:
    """What the service posts for one call (each event once)."""
    peer = {"peerPn": f"{to}@s.whatsapp.net"}
    ring = _event("call.ringing", call, to, T0, session, state="ringing", **peer)
    if not answered:
        return [ring, _event("call.not_answered", call, to, T0 + timedelta(seconds=30),
                             session, state="idle", reason="no_answer", **peer)]
    url = RECORDING.format(call=call)
    return [ring,
            _event("call.connected", call, to, T0 + timedelta(seconds=4), session,
                   state="active", **peer),
            _event("call.ended", call, to, T0 + timedelta(seconds=21), session, state="idle",
                   reason="hangup", **peer),
            _event("call.audio", call, to, T0 + timedelta(seconds=22), session,
                   files={"full": url, "sender": None, "recipient": None}, url=url,
                   durationMs=17_000, sizeBytes=544_044, mimetype="audio/wav",
                   phone=to)]


def repeat(event: dict[str, Any]) -> dict[str, Any]:
    """The connection layer's repeat: a new envelope (a few ms later), the same data."""
    at = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
    return {**event, "timestamp": iso(at + REPEAT_LAG)}


def ingest(ledger: Ledger, events: list[dict[str, Any]], at: datetime) -> None:
    """Store and apply events as the receiver does."""
    items = [incoming_from(e, json.dumps(e), at) for e in events]
    store_and_apply(TrackingStore(ledger), items, CTX, at)


def claimed_run(ledger: Ledger, recipients: int) -> tuple[int, list[int]]:
    """A run whose deliveries are claimed (``dispatching`` on s1): its id and row ids."""
    run_id = make_run(ledger, recipients)
    ids = [r["id"] for r in rows(ledger, run_id)]
    with ledger.engine.begin() as conn:
        assert dq.claim(conn, [(i, "s1") for i in ids], T0) == set(ids)
    return run_id, ids


def record_calls(ledger: Ledger, run_id: int, accepted: list[tuple[int, str]]) -> None:
    """The dispatcher's commit of the placed calls' answers (their ``callId``), then
    tracking's matching of the events that came first (as ``Settling`` does)."""
    stores = run_store(ledger, run_id)
    stores.queue.write([(Changes(accepted=accepted), T0 + timedelta(seconds=1))])
    stores.match_events([m for _i, m in accepted], T0 + timedelta(seconds=1))


def _near(moment: datetime | None, expected: datetime) -> bool:
    """The event's own time, or its repeat's (whichever of the two was stored)."""
    return moment is not None and expected <= moment <= expected + REPEAT_LAG


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_call_has_one_outcome_in_any_order_with_repeats_and_early_events(
        tledger_calls: Ledger, seed: int) -> None:
    ledger, rng = tledger_calls, random.Random(seed)
    n = 8
    run_id, ids = claimed_run(ledger, n)
    answered = {i: i % 2 == 0 for i in range(n)}
    early: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    for i in range(n):
        events = call_events(f"CALL{i}", number(i), answered=answered[i])
        if not answered[i]:  # a recording of a call not answered: never counted
            url = RECORDING.format(call=f"CALL{i}")
            events.append(_event("call.audio", f"CALL{i}", number(i), T0, url=url,
                                 files={"full": url}, durationMs=5000))
        events += [repeat(e) for e in events]
        rng.shuffle(events)
        cut = rng.randrange(len(events) + 1)
        early += events[:cut]
        late += events[cut:]
    ingest(ledger, early, T0 + timedelta(milliseconds=500))
    record_calls(ledger, run_id, [(ids[i], f"CALL{i}") for i in range(n)])
    ingest(ledger, late, T0 + timedelta(seconds=50))
    # a second terminal event of the other kind, after the first: not a second outcome
    ingest(ledger, [_event("call.ended", f"CALL{i}", number(i), T0 + timedelta(seconds=60),
                           state="idle", reason="hangup") if not answered[i] else
                    _event("call.not_answered", f"CALL{i}", number(i),
                           T0 + timedelta(seconds=60), state="idle", reason="no_answer")
                    for i in range(n)], T0 + timedelta(seconds=60))

    for i, row in enumerate(rows(ledger, run_id)):
        details = json.loads(row["details"])
        if answered[i]:
            assert row["state"] == "answered"
            assert _near(row["ended_at"], T0 + timedelta(seconds=21))
            assert details == {"callId": f"CALL{i}", "answered": True, "reason": "hangup",
                               "durationMs": 17_000,
                               "recordingUrl": RECORDING.format(call=f"CALL{i}")}
        else:
            assert row["state"] == "not_answered"
            assert _near(row["ended_at"], T0 + timedelta(seconds=30))
            assert details == {"callId": f"CALL{i}", "answered": False,
                               "reason": "no_answer"}
        assert _near(row["sent_at"], T0)


def test_a_call_left_dispatching_by_a_crash_is_proven_by_its_events(
        tledger_calls: Ledger) -> None:
    ledger = tledger_calls
    run_id, _ids = claimed_run(ledger, 3)
    # the calls' answers were lost with the process; their events came (unmatched)
    ingest(ledger, call_events("LOST0", number(0), answered=True)
           + call_events("LOST1", number(1), answered=False, session="s2"),
           T0 + timedelta(seconds=30))
    counts = _recover(run_store(ledger, run_id), channel_for("calls"),
                                           T0 + timedelta(minutes=5), at_least_once=False)
    assert counts["sent"] == 1 and counts["unknown"] == 2
    first, second, third = rows(ledger, run_id)
    assert (first["state"], first["message_id_norm"]) == ("answered", "lost0")
    assert json.loads(first["details"])["recordingUrl"] == RECORDING.format(call="LOST0")
    # a call of another session to that number proves nothing of s1's row
    assert second["state"] == third["state"] == "unknown"
