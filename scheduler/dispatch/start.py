"""Start the engine on a stored run: its options, the senders' quotas, the dispatcher."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from scheduler.dispatch.channel import ServiceCalls
from scheduler.dispatch.channels import channel_for
from scheduler.dispatch.dispatcher import Dispatcher
from scheduler.dispatch.leases import Seat
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import RunResult
from scheduler.dispatch.shared_senders import SharedSenders
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import FINISHED_RUN_STATUSES
from scheduler.run_options import SESSION_CHANNELS
from scheduler.timeutil import Clock, utcnow


async def dispatch(
    ledger: Ledger, client: ServiceCalls, run: Run, *, clock: Clock = utcnow,
    sleep: Callable[[float], Awaitable[None]] | None = None, rng: random.Random | None = None,
    events_received: bool = False, stop_event: asyncio.Event | None = None,
    on_progress: Callable[[dict[str, int]], None] | None = None,
    progress_every_s: float = 0.0,
    option_overrides: dict[str, Any] | None = None,
    on_note: Callable[[Any], None] | None = None,
    seat: Seat | None = None, shared: SharedSenders | None = None,
) -> RunResult:
    """Dispatch ``run`` to the end (or a stop) with its stored options; ``seat``: the
    ``campaign serve`` worker this runs in (its leases choose the senders); ``shared``: the
    process's record of claims per sender, when it dispatches several runs at once."""
    if run.status in FINISHED_RUN_STATUSES:
        raise RunStateError(f"run {run.id} is already {run.status}")
    assert run.id is not None
    stored = ledger.options(run)
    overrides = dict(option_overrides or {})
    if run.channel not in SESSION_CHANNELS and not stored.senders:
        overrides.setdefault("senders", ("account",))  # SMS/voice planned before 0.x named none
    options = DispatchOptions.for_run(stored, start=run.started_at or clock(), **overrides)
    kwargs: dict[str, Any] = {}
    if sleep is not None:
        kwargs["sleep"] = sleep
    channel = channel_for(run.channel, options)
    quotas = await channel.quotas(client, list(options.senders))
    dispatcher = Dispatcher(
        ledger, client, run.id, options, channel=channel, clock=clock, rng=rng,
        events_received=events_received,
        on_progress=on_progress, progress_every_s=progress_every_s, stop_event=stop_event,
        quotas=quotas, on_note=on_note, seat=seat, shared=shared,
        **kwargs,
    )
    return await dispatcher.run()
