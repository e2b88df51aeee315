"""Every worker may receive webhooks: two receivers (each with its own engine, as two
``campaign serve`` processes have) on one ledger store and apply an event once, whichever
gets it, and its repeats at the other change nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from scheduler.core.httpserver import BackgroundServer
from scheduler.ledger.runs import Ledger
from scheduler.tracking import create_receiver
from tests.factories import T0, number, open_test_ledger
from tests.tracking.support import (
    ReceiverHandle,
    accepted_run,
    mid,
    receipt,
    received,
    rows,
    sent,
    settings,
    table,
)

JSON = {"content-type": "application/json"}


@pytest.fixture
def two_receivers(ledger_url: str) -> Iterator[tuple[Ledger, list[ReceiverHandle]]]:
    """Two receivers on one ledger, each on an engine of its own."""
    with open_test_ledger(ledger_url) as first, open_test_ledger(ledger_url) as second:
        handles = [ReceiverHandle(BackgroundServer(create_receiver(settings(), led,
                                                                   sweep_every_s=0.05))
                                  .start(), settings()) for led in (first, second)]
        try:
            yield first, handles
        finally:
            for handle in handles:
                handle.close()


async def test_an_event_is_applied_once_whichever_worker_receives_it(
        two_receivers: tuple[Ledger, list[ReceiverHandle]]) -> None:
    ledger, receivers = two_receivers
    run_id = accepted_run(ledger, 3)
    later = T0.replace(minute=5)
    events = [sent(number(i), mid(i)) for i in range(3)]
    events += [receipt("message.read", number(i), mid(i), later) for i in range(3)]
    events.append(received(number(0), "Quero saber mais"))
    bodies = [json.dumps(e).encode() for e in events]
    async with httpx.AsyncClient(timeout=10.0) as client:
        # every event 10 times, alternately at each receiver, all at once
        answers = await asyncio.gather(*(
            client.post(receivers[k % 2].url, content=body, headers=JSON)
            for body in bodies for k in range(10)))
    assert {a.status_code for a in answers} == {200}
    stored = [a.json()["duplicate"] for a in answers]
    assert stored.count(False) == len(events)  # each stored once, at one of the two
    assert len(table(ledger, "events")) == len(events)
    assert len(table(ledger, "replies")) == 1
    assert [r["state"] for r in rows(ledger, run_id)] == ["read"] * 3
