"""Warm-up in real dispatches on a simulated clock: caps counted over every run."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from datetime import date

import pytest
from sqlalchemy import select

from scheduler.core.units import load_zone
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.warmup import DEFAULT_PROFILE, cap_for_day
from scheduler.ledger import access
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from scheduler.settings.senders import SenderCare
from tests.engine import dispatcher_for
from tests.factories import FakeClock, make_run

ZONE = "America/Sao_Paulo"
WARM = SenderCare(warmup="default")
#: Each campaign's recipients: 400 together fill warm-up days 1-4 (238) and part of day 5 (of
#: 210), so every day but the last is held at the cap (1,400 ran to day 7 on the same profile,
#: 3.5 times the sends for the same checks).
EACH = 200


def _sends_per_day(ledger: Ledger, sender: str) -> dict[date, int]:
    d = tables.deliveries.c
    with access.read(ledger.engine, "read the sends") as conn:
        times = conn.execute(select(d.dispatched_at).where(
            d.sender == sender, d.dispatched_at.is_not(None))).scalars().all()
    return dict(sorted(Counter(t.astimezone(load_zone(ZONE)).date() for t in times).items()))


@pytest.mark.slow
async def test_two_campaigns_sharing_a_new_number_never_pass_its_warm_up_caps_together(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    first = make_run(ledger, EACH, senders=("s1",), name="first")
    second = make_run(ledger, EACH, senders=("s1",), name="second")
    options = DispatchOptions(senders=("s1",), rate=5.0, timezone=ZONE, daily_cap=1000)
    async with ServiceClient(service.base_url, service.api_key) as client:
        runs = [dispatcher_for(ledger, client, run_id, options, clock=clock,
                               rng=random.Random(n), care=WARM)
                for n, run_id in enumerate((first, second))]
        results = await asyncio.gather(*(d.run() for d in runs))
    assert [r.status for r in results] == [RunStatus.COMPLETED, RunStatus.COMPLETED]
    per_day = _sends_per_day(ledger, "s1")
    caps = [cap_for_day(DEFAULT_PROFILE, day, 1000) for day in range(1, len(per_day) + 1)]
    assert list(per_day.values()) == [*caps[:-1], 2 * EACH - sum(caps[:-1])]
    assert list(per_day.values())[:4] == [20, 36, 65, 117]  # both runs sent, summed
    assert len(per_day) == 5 and sum(per_day.values()) == 2 * EACH
    said = [e.what for d in runs for e in d.timeline if e.kind == "warming"]
    assert "s1 warming: day 1 of 8, 20 today" in said
    assert "s1 warming: day 3 of 8, 65 today" in said
    # every row of both runs sent once: the cap held rows back, it never lost or doubled one
    assert [r.counts for r in results] == [{"accepted": EACH}, {"accepted": EACH}]
    assert len(service.sends()) == 2 * EACH
