"""A dispatcher for one stored run, wired as the program wires it (tests' builder)."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from scheduler.core.timeutil import SimulatedClock
from scheduler.dispatch.channel import ServiceCalls
from scheduler.dispatch.channels import channel_for
from scheduler.dispatch.dispatcher import Dispatcher, RunSetup, Timing
from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.runs import Ledger
from scheduler.wiring import run_store


def dispatcher_for(ledger: Ledger, client: ServiceCalls, run_id: int,
                   options: DispatchOptions, *, clock: SimulatedClock | None = None,
                   sleep: Callable[[float], Awaitable[None]] | None = None,
                   channel: str = "whatsapp", rng: random.Random | None = None,
                   **setup: Any) -> Dispatcher:
    """The dispatcher of ``run_id`` on ``channel``: on the simulated ``clock`` (sleeping
    with ``sleep``, else the clock's own) when given, else on real time."""
    timing = Timing() if clock is None else \
        Timing.simulated_by(clock, sleep or clock.sleep)
    return Dispatcher(run_store(ledger, run_id), client, options,
                      channel=channel_for(channel, options),
                      setup=RunSetup(timing=timing, rng=rng or random.Random(), **setup))
