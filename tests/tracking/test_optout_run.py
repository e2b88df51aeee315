"""End to end: a dispatcher run on the sandbox, webhooks to the receiver, an opt-out mid-run."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from typing import Any

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from scheduler.tracking import tracking_counts
from tests.engine import dispatcher_for
from tests.factories import FakeClock, make_run, number
from tests.tracking.support import rows, table, wait_until


async def _poll(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_an_opt_out_mid_run_skips_the_rest_of_that_recipients_messages(
        ledger: Ledger, clock: FakeClock, make_sandbox, make_receiver) -> None:
    sandbox = make_sandbox(clock=clock)
    receiver = make_receiver(ledger)
    sandbox.create_session("s1", webhook_url=receiver.url)
    run_id = make_run(ledger, 3, steps=3)
    options = DispatchOptions(senders=("s1",), rate=10.0, timezone="America/Sao_Paulo",
                              step_delays_s=(0.0, 30.0, 30.0))
    said = False

    def first_steps_accepted() -> bool:
        return all(r["state"] != "planned" for r in rows(ledger, run_id) if r["step"] == 0)

    async def sleep(seconds: float) -> None:
        """Between the first and second steps, recipient 0 writes "SAIR"."""
        nonlocal said
        if not said and first_steps_accepted():
            said = True
            answer = sandbox.http.post("/sandbox/sessions/s1/receive",
                                       json={"from": number(0), "text": "SAIR"})
            assert answer.status_code == 200, answer.text
            await _poll(lambda: table(ledger, "suppressions"))
        await clock.sleep(seconds)

    async with ServiceClient(sandbox.base_url, sandbox.api_key) as client:
        result = await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                      sleep=sleep, rng=random.Random(3)).run()
    assert said and result.status == RunStatus.COMPLETED
    assert Counter(s["to"] for s in sandbox.sends()) == {number(0): 1, number(1): 3,
                                                         number(2): 3}
    skipped = [(r["step"], r["reason"]) for r in rows(ledger, run_id)
               if r["state"] == "skipped"]
    assert skipped == [(1, "opted_out"), (2, "opted_out")]
    [reply] = table(ledger, "replies")
    first = next(r for r in rows(ledger, run_id) if r["to"] == number(0))
    assert (reply["delivery_id"], reply["text"], reply["opt_out"]) == (first["id"], "SAIR",
                                                                       True)
    # Every message the sandbox sent is proven by its messages.sent event.
    wait_until(lambda: all(r["state"] == "sent" for r in rows(ledger, run_id)
                           if r["state"] != "skipped"))
    assert tracking_counts(ledger, run_id) == {"sent": 7, "delivered": 0, "read": 0,
                                                "replied": 1, "opted_out": 1}


async def test_receipts_arriving_duplicated_and_out_of_order_end_every_row_read(
        ledger: Ledger, clock: FakeClock, make_sandbox, make_receiver) -> None:
    sandbox = make_sandbox(clock=clock, delivered_rate=1.0, read_rate=1.0,
                           recipient_delay_ms=(1, 5), webhook_duplicate_rate=0.5,
                           webhook_reorder=True, webhook_reorder_hold_ms=20)
    receiver = make_receiver(ledger)
    sandbox.create_session("s1", webhook_url=receiver.url)
    sandbox.create_session("s2", webhook_url=receiver.url)
    run_id = make_run(ledger, 20, senders=("s1", "s2"))
    options = DispatchOptions(senders=("s1", "s2"), rate=50.0, timezone="America/Sao_Paulo")
    async with ServiceClient(sandbox.base_url, sandbox.api_key) as client:
        result = await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                      rng=random.Random(5)).run()
    assert result.status == RunStatus.COMPLETED
    final = wait_until(lambda: (r := rows(ledger, run_id))
                       and all(x["state"] == "read" for x in r) and r, timeout=20)
    for row in final:
        assert row["sent_at"] <= row["delivered_at"] <= row["read_at"]
    events = table(ledger, "events")
    assert Counter(e["event"] for e in events) == {"messages.sent": 20,
                                                   "message.delivered": 20,
                                                   "message.read": 20}
    assert tracking_counts(ledger, run_id) == {"sent": 20, "delivered": 20, "read": 20,
                                                "replied": 0, "opted_out": 0}


async def test_an_opt_out_skips_a_row_the_dispatcher_already_holds_in_memory(
        ledger: Ledger, clock: FakeClock, make_sandbox, make_receiver) -> None:
    """Rows are read ahead (``REFILL``) long before their send at a slow pace; one whose
    number opts out meanwhile must not be sent when its turn comes."""
    sandbox = make_sandbox(clock=clock)
    receiver = make_receiver(ledger)
    sandbox.create_session("s1", webhook_url=receiver.url)
    run_id = make_run(ledger, 3)
    options = DispatchOptions(senders=("s1",), rate=1 / 60, timezone="America/Sao_Paulo")
    said = False

    async def sleep(seconds: float) -> None:
        nonlocal said
        if not said and sandbox.sends():  # the first message went; the others wait in memory
            said = True
            sandbox.http.post("/sandbox/sessions/s1/receive",
                              json={"from": number(2), "text": "SAIR"}).raise_for_status()
            await _poll(lambda: table(ledger, "suppressions"))
        await clock.sleep(seconds)

    async with ServiceClient(sandbox.base_url, sandbox.api_key) as client:
        await dispatcher_for(ledger, client, run_id, options, clock=clock, sleep=sleep,
                             rng=random.Random(3)).run()
    assert said
    assert [s["to"] for s in sandbox.sends()] == [number(0), number(1)]
