"""Audience rules in real dispatches: a number's messages counted over every campaign."""

from __future__ import annotations

import random

from sqlalchemy import select

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger import access
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from tests.engine import dispatcher_for
from tests.factories import FakeClock, make_run


def _states(ledger: Ledger, run_id: int) -> list[tuple[str, str | None]]:
    d = tables.deliveries.c
    with access.read(ledger.engine, "read rows") as conn:
        return [(r.state, r.reason) for r in conn.execute(
            select(d.state, d.reason).where(d.run_id == run_id).order_by(d.seq))]


async def test_a_second_campaign_skips_numbers_at_their_daily_cap_and_says_why(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    first = make_run(ledger, 3, senders=("s1",), name="first")
    second = make_run(ledger, 5, senders=("s1",), name="second")  # the same 3, and 2 more
    plain = DispatchOptions(senders=("s1",), rate=5.0, timezone="America/Sao_Paulo")
    capped = DispatchOptions(senders=("s1",), rate=5.0, timezone="America/Sao_Paulo",
                             max_per_day=1)
    async with ServiceClient(service.base_url, service.api_key) as client:
        done = await dispatcher_for(ledger, client, first, plain, clock=clock,
                                    rng=random.Random(1)).run()
        result = await dispatcher_for(ledger, client, second, capped, clock=clock,
                                      rng=random.Random(2)).run()
    assert (done.status, result.status) == (RunStatus.COMPLETED, RunStatus.COMPLETED)
    states = _states(ledger, second)
    assert [s for s, _r in states] == ["skipped"] * 3 + ["accepted"] * 2
    assert states[0][1] == ("frequency_cap: 1 message to this number today "
                            "(max_per_day = 1)")
    assert len(service.sends()) == 3 + 2  # nothing sent twice to a capped number
