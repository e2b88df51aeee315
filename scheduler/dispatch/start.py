"""Start the engine on a stored run: its options, the senders' quotas, the dispatcher."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from scheduler.dispatch.dispatcher import Dispatcher, RunResult
from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import FINISHED_RUN_STATUSES
from scheduler.service.exceptions import ServiceError
from scheduler.timeutil import Clock, utcnow


async def load_quotas(client: Any, senders: list[str]) -> dict[str, tuple[float,
                                                                        datetime | None]]:
    """Each sender's remaining plan quota from ``GET /api/v1/limits/{sessionId}``, when known.

    An unknown or partial answer means "no limit known" for that sender.
    """
    quotas: dict[str, tuple[float, datetime | None]] = {}
    if not hasattr(client, "get_limits"):
        return quotas
    for name in senders:
        try:
            limits = await client.get_limits(name)
        except ServiceError:
            continue
        left = limits.remaining("messages")
        if left is not None:
            resets_at = None
            if limits.resetsAt:
                with contextlib.suppress(ValueError):
                    resets_at = datetime.fromisoformat(limits.resetsAt.replace("Z", "+00:00"))
            quotas[name] = (float(left), resets_at)
    return quotas


async def dispatch(
    ledger: Ledger, client: Any, run: Run, *, clock: Clock = utcnow,
    sleep: Callable[[float], Awaitable[None]] | None = None, rng: random.Random | None = None,
    events_received: bool = False, stop_event: asyncio.Event | None = None,
    on_progress: Callable[[dict[str, int]], None] | None = None,
    progress_every_s: float = 0.0,
    option_overrides: dict[str, Any] | None = None,
    on_note: Callable[[Any], None] | None = None,
) -> RunResult:
    """Dispatch ``run`` to the end (or a stop) with its stored definition."""
    if run.status in FINISHED_RUN_STATUSES:
        raise RunStateError(f"run {run.id} is already {run.status}")
    assert run.id is not None
    options = DispatchOptions.from_definition(
        ledger.definition(run), start=run.started_at or clock(), **(option_overrides or {})
    )
    kwargs: dict[str, Any] = {}
    if sleep is not None:
        kwargs["sleep"] = sleep
    quotas = await load_quotas(client, list(options.senders))
    dispatcher = Dispatcher(
        ledger, client, run.id, options, clock=clock, rng=rng, events_received=events_received,
        on_progress=on_progress, progress_every_s=progress_every_s, stop_event=stop_event,
        quotas=quotas, on_note=on_note,
        **kwargs,
    )
    return await dispatcher.run()
