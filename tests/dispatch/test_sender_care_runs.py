"""Sender care in real dispatches: a person's pause and resume, every sender held."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from datetime import timedelta

import pytest

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger import access
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import ChangeSource, RunStatus, SenderStatus
from scheduler.service.client import ServiceClient
from scheduler.settings.senders import SenderCare
from tests.engine import dispatcher_for
from tests.factories import T0, FakeClock, make_run

CARE = SenderCare()


def _set(ledger: Ledger, sender: str, state: str, reason: str) -> None:
    with access.transaction(ledger.engine, "set a sender's state") as conn:
        spq.change_state(conn, sender, state, reason, ChangeSource.OPERATOR, T0)


async def test_a_paused_sender_gets_no_rows_and_the_others_finish_them(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1", "s2")
    run_id = make_run(ledger, 30, senders=("s1", "s2"))
    _set(ledger, "s2", SenderStatus.PAUSED, "too many complaints last week")
    options = DispatchOptions(senders=("s1", "s2"), rate=5.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, service.api_key) as client:
        dispatcher = dispatcher_for(ledger, client, run_id, options, clock=clock,
                                    rng=random.Random(1), care=CARE)
        result = await dispatcher.run()
    assert result.status == RunStatus.COMPLETED and result.counts == {"accepted": 30}
    assert Counter(s["sessionId"] for s in service.sends()) == {"s1": 30}
    said = [e.what for e in dispatcher.timeline if e.kind == "sender_down"]
    assert said == ["sender s2 paused: too many complaints last week; no sends through it"]


async def test_with_every_sender_held_the_run_waits_says_what_to_do_and_goes_on_when_resumed(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 5, senders=("s1",))
    _set(ledger, "s1", SenderStatus.PAUSED, "checking the number")
    options = DispatchOptions(senders=("s1",), rate=5.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, service.api_key) as client:
        dispatcher = dispatcher_for(ledger, client, run_id, options, clock=clock,
                                    rng=random.Random(1), care=CARE)

        async def person() -> None:
            while not any(e.kind == "senders_held" for e in dispatcher.timeline):
                await asyncio.sleep(0)
            assert service.sends() == []  # nothing went out while it was held
            _set(ledger, "s1", SenderStatus.HEALTHY, "number checked")

        result, _ = await asyncio.gather(dispatcher.run(), person())
    assert result.status == RunStatus.COMPLETED and len(service.sends()) == 5
    [held] = [e.what for e in dispatcher.timeline if e.kind == "senders_held"]
    assert held == ("every sender is held back (s1 paused: checking the number): the run "
                    "waits; resume one with `campaign senders resume ID --reason TEXT`, "
                    "or reconnect its session")
    assert any(e.kind == "sender_up" and e.sender == "s1" for e in dispatcher.timeline)


@pytest.mark.slow  # 400 sends through the HTTP service and the ledger
async def test_a_rate_limit_storm_throttles_the_sender_then_it_recovers_step_by_step(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock, rate_limit_storm={
        "s1": {"after_sends": 20, "for_s": 120, "retry_after_s": 1}})
    await service.connect("s1")
    run_id = make_run(ledger, 400, senders=("s1",))
    options = DispatchOptions(senders=("s1",), rate=1.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, service.api_key) as client:
        dispatcher = dispatcher_for(ledger, client, run_id, options, clock=clock,
                                    rng=random.Random(1), care=CARE)
        result = await dispatcher.run()
    assert result.status == RunStatus.COMPLETED and result.counts == {"accepted": 400}
    kinds = [(e.kind, e.what) for e in dispatcher.timeline
             if e.kind in ("sender_throttled", "sender_up")]
    assert kinds[0][0] == "sender_throttled" and "429s" in kinds[0][1]
    assert kinds[-1] == ("sender_up", "sender s1 back to full speed")
    with access.read(ledger.engine, "read the history") as conn:
        changes = [(c.from_state, c.to_state) for c in reversed(spq.history(conn, "s1"))]
    assert (SenderStatus.HEALTHY, SenderStatus.THROTTLED) in changes
    assert changes[-1] == (SenderStatus.THROTTLED, SenderStatus.HEALTHY)


async def test_a_row_answered_429_goes_to_another_sender_rather_than_wait_for_its_own(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock, rate_limit_storm={
        "s1": {"after_sends": 5, "for_s": 600, "retry_after_s": 600}})
    await service.connect("s1", "s2")
    run_id = make_run(ledger, 40, senders=("s1", "s2"))
    options = DispatchOptions(senders=("s1", "s2"), rate=5.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, service.api_key) as client:
        result = await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                      rng=random.Random(1), care=CARE).run()
    assert result.status == RunStatus.COMPLETED and result.counts == {"accepted": 40}
    # s1 answers 429 for ten minutes: the row it refused went out through s2 at once
    assert clock() - T0 < timedelta(minutes=1)
    assert Counter(s["sessionId"] for s in service.sends()) == {"s1": 5, "s2": 35}
