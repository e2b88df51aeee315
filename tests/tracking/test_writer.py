"""The group-commit writer: many waiting events share one commit; both writer modes."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import EventWriter
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0, number
from tests.tracking.support import accepted_run, mid, receipt, rows, sent, table

CTX = ApplyContext(OptOutWords(["SAIR"]))


@pytest.mark.parametrize("threaded", [False, True])
async def test_concurrent_events_share_commits_and_each_learns_its_outcome(
        tledger: Ledger, threaded: bool) -> None:
    run_id = accepted_run(tledger, 100)
    events = [sent(number(i), mid(i), T0) for i in range(100)]
    events += [receipt("message.read", number(i), mid(i), T0 + timedelta(seconds=5))
               for i in range(100)]
    items = [incoming_from(e, json.dumps(e), T0) for e in events + events[:10]]
    writer = EventWriter(TrackingStore(tledger), CTX, lambda: T0, threaded=threaded, max_batch=64)
    writer.start()
    try:
        stored = await asyncio.gather(*(writer.submit(item) for item in items))
    finally:
        await writer.aclose()
    assert [s.duplicate for s in stored] == [False] * 200 + [True] * 10
    assert len({s.event_id for s in stored[:200]}) == 200
    assert writer.events == 210 and writer.batches < 210 / 2
    assert {r["state"] for r in rows(tledger, run_id)} == {"read"}
    assert len(table(tledger, "events")) == 200


async def test_a_failed_commit_reaches_every_waiter_as_a_ledger_error(
        tledger: Ledger) -> None:
    from sqlalchemy import text

    with tledger.engine.begin() as conn:
        conn.execute(text("DROP TABLE events"))
    writer = EventWriter(TrackingStore(tledger), CTX, lambda: T0)
    writer.start()
    try:
        event = sent(number(0), mid(0))
        results = await asyncio.gather(
            *(writer.submit(incoming_from(event, json.dumps(event), T0)) for _ in range(3)),
            return_exceptions=True)
    finally:
        await writer.aclose()
    assert all(isinstance(r, LedgerError) for r in results)
