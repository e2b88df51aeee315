"""Crash reconciliation through the receiver: late ``messages.sent``, late matches, restarts."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update

from scheduler.dispatch import reconcile
from scheduler.dispatch.channel import Channel
from scheduler.dispatch.channels.whatsapp import WhatsAppChannel
from scheduler.dispatch.store import RunStores
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import events as eq
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.tracking.intake import incoming_from
from scheduler.wiring import run_store
from tests.factories import T0, make_run, number
from tests.tracking.support import receipt, rows, sent, table, wait_until

WHATSAPP = WhatsAppChannel()

CRASHED_ID = "3EB0AAAABBBBCCCCDDDD01"


def _recover(stores: RunStores, channel: Channel, now: datetime, **kw: Any) -> dict[str, int]:
    """Reconciliation as the dispatcher runs it: the run's queue, then tracking's matching."""
    return reconcile.recover_after_crash(stores.queue, channel, now,
                                         match_events=stores.match_events, **kw)



def _claim(ledger: Ledger, run_id: int, to: str, *, at=T0) -> int:
    """The dispatcher's claim (committed before its HTTP call), then a crash."""
    [row] = [r for r in rows(ledger, run_id) if r["to"] == to and r["step"] == 0]
    with ledger.engine.begin() as conn:
        dq.claim(conn, [(row["id"], "s1")], at)
    return row["id"]


def _state(ledger: Ledger, delivery_id: int) -> dict:
    return next(r for r in rows(ledger) if r["id"] == delivery_id)


def test_a_dispatching_row_becomes_sent_when_its_late_event_arrives_after_a_restart(
        tledger: Ledger, make_receiver) -> None:
    run_id = make_run(tledger, 2)
    crashed = _claim(tledger, run_id, number(0))
    first = make_receiver(tledger)
    first.close()  # the process died; the receiver comes back with the next run
    receiver = make_receiver(tledger)
    sent_at = T0 + timedelta(seconds=1)
    assert receiver.post(sent(number(0), CRASHED_ID, sent_at)).status_code == 200
    row = _state(tledger, crashed)
    assert row["state"] == "sent" and row["sent_at"] == sent_at
    assert row["message_id_norm"] == CRASHED_ID.lower()
    [event] = table(tledger, "events")
    assert event["result"] == f"proved delivery {crashed} sent"
    # The dispatcher's own recovery at its next start finds nothing left to settle.
    counts = _recover(run_store(tledger, run_id), WHATSAPP,
                                           T0 + timedelta(minutes=1), at_least_once=False)
    assert counts == {"sent": 0, "unknown": 0, "requeued": 0, "verifying": 0}


def test_an_unknown_row_is_proved_sent_too_and_receipts_that_came_first_apply(
        tledger: Ledger, make_receiver) -> None:
    run_id = make_run(tledger, 1)
    crashed = _claim(tledger, run_id, number(0))
    _recover(run_store(tledger, run_id), WHATSAPP,
                                  T0 + timedelta(seconds=30), at_least_once=False)
    assert _state(tledger, crashed)["state"] == "unknown"
    receiver = make_receiver(tledger)
    t1, t2 = T0 + timedelta(seconds=4), T0 + timedelta(seconds=40)
    receiver.post(receipt("message.read", number(0), CRASHED_ID, t2))
    receiver.post(receipt("message.delivered", number(0), CRASHED_ID, t1))
    assert _state(tledger, crashed)["state"] == "unknown"  # nothing holds that id yet
    receiver.post(sent(number(0), CRASHED_ID, T0 + timedelta(seconds=1)))
    row = _state(tledger, crashed)
    assert row["state"] == "read"
    assert (row["delivered_at"], row["read_at"]) == (t1, t2)
    assert {e["result"] for e in table(tledger, "events")} == {
        "read", "delivered", f"proved delivery {crashed} sent"}


def test_an_event_of_another_sender_or_recipient_proves_nothing(
        tledger: Ledger, make_receiver) -> None:
    run_id = make_run(tledger, 2)
    crashed = _claim(tledger, run_id, number(0))
    receiver = make_receiver(tledger)
    receiver.post(sent(number(0), "3EB0OTHER", session="s2"))
    receiver.post(sent(number(1), "3EB0THIRD"))
    receiver.post(sent(number(0), "3EB0EARLY", T0 - timedelta(minutes=5)))  # before dispatch
    assert _state(tledger, crashed)["state"] == "dispatching"
    assert {e["result"] for e in table(tledger, "events")} == {"unmatched"}


def test_stored_events_serve_the_dispatchers_own_reconciliation(
        tledger: Ledger, make_receiver) -> None:
    """An event stored before the row was claimed again is found by ``reconcile``."""
    run_id = make_run(tledger, 1)
    receiver = make_receiver(tledger)
    receiver.post(sent(number(0), CRASHED_ID, T0 + timedelta(seconds=2)))
    [event] = table(tledger, "events")
    assert (event["number"], event["session_id"], event["message_id_norm"]) == (
        number(0), "s1", CRASHED_ID.lower())
    crashed = _claim(tledger, run_id, number(0))
    d = tables.deliveries
    with tledger.engine.begin() as conn:  # pretend it was received after the dispatch
        conn.execute(update(tables.events).values(received_at=T0 + timedelta(seconds=2)))
        conn.execute(update(d).where(d.c.id == crashed).values(dispatched_at=T0))
    counts = _recover(run_store(tledger, run_id), WHATSAPP,
                                           T0 + timedelta(minutes=1), at_least_once=False)
    assert counts["sent"] == 1 and _state(tledger, crashed)["state"] == "sent"


def test_a_receipt_before_the_message_id_is_recorded_applies_once_it_is(
        tledger: Ledger, make_receiver) -> None:
    """A fast receipt can beat the dispatcher's commit of ``messageId``: retried later."""
    run_id = make_run(tledger, 1)
    claimed = _claim(tledger, run_id, number(0))
    receiver = make_receiver(tledger, sweep_every_s=0.02)
    delivered_at = T0 + timedelta(seconds=2)
    receiver.post(receipt("message.delivered", number(0), CRASHED_ID, delivered_at))
    assert table(tledger, "events")[0]["result"] == "unmatched"
    with tledger.engine.begin() as conn:  # the dispatcher commits the send's outcome
        dq.record_accepted(conn, [(claimed, CRASHED_ID.lower())], T0)
    row = wait_until(lambda: (r := _state(tledger, claimed))["state"] == "delivered" and r)
    assert row["delivered_at"] == delivered_at
    assert wait_until(lambda: table(tledger, "events")[0]["result"] == "delivered")


def test_events_stored_but_never_applied_are_applied_at_start(
        tledger: Ledger, make_receiver) -> None:
    run_id = make_run(tledger, 1)
    claimed = _claim(tledger, run_id, number(0))
    event = sent(number(0), CRASHED_ID, T0 + timedelta(seconds=1))
    item = incoming_from(event, json.dumps(event), T0 + timedelta(seconds=1))
    with tledger.engine.begin() as conn:  # stored, then the process died before applying
        eq.insert_events(conn, [item.row()])
    assert table(tledger, "events")[0]["applied_at"] is None
    receiver = make_receiver(tledger)
    assert _state(tledger, claimed)["state"] == "sent"
    [stored] = table(tledger, "events")
    assert stored["applied_at"] is not None
    assert receiver.app.state.receiver.recovered == 1


def test_late_matches_forget_the_oldest_beyond_their_bound() -> None:
    from scheduler.tracking.receiver import LateMatches

    late = LateMatches(ttl_s=3600, most=3)
    late.add([(1, "a"), (2, "b"), (3, "c"), (4, "d"), (2, "b")])
    assert len(late) == 3 and sorted(late.norms()) == ["b", "c", "d"]
    assert late.due({"c", "z"}) == [3]
    assert sorted(late.norms()) == ["b", "d"]
    expired = LateMatches(ttl_s=0.0)
    expired.add([(1, "a")])
    assert wait_until(lambda: expired.due(set()) == [] and len(expired) == 0)
