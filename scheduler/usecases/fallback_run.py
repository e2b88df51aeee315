"""A run's fallback run (``[fallback]``), dispatched beside it by ``campaign run``/``resume``.

The fallback run is planned empty with its parent; the parent's dispatcher hands it one
row per recipient its first channel did not reach by ``after``
(:mod:`scheduler.dispatch.dispatcher.recycling`). Both are dispatched at once, each on its
own channel and senders; the fallback run waits while its parent may still hand it rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from scheduler.dispatch.results import RunResult, TimelineEntry
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import FINISHED_RUN_STATUSES
from scheduler.service.client import ServiceClient
from scheduler.settings.load import Settings
from scheduler.wiring import ensure_account_webhook


def fallback_of(ledger: Ledger, run: Run) -> Run | None:
    """The run's fallback run when it has one still to dispatch."""
    assert run.id is not None
    child_id = ledger.fallback_run_of(run.id)
    if child_id is None:
        return None
    child = ledger.get_run(child_id)
    return None if child.status in FINISHED_RUN_STATUSES else child


async def point_webhook(client: ServiceClient, settings: Settings, child: Run,
                        server: Any) -> None:
    """Point the account's webhook of the fallback's channel (SMS, voice) at our receiver
    (no receiver: tracking is off, as for the parent)."""
    from scheduler.dispatch.channels import from_account

    if server is None or not from_account(child.channel):
        return
    from scheduler.tracking import account_webhook_url

    await ensure_account_webhook(client, settings, child.channel,
                                 account_webhook_url(settings, server))


async def with_fallback(parent: Awaitable[RunResult], child: Run | None,
                        dispatch_child: Callable[[Run], Awaitable[RunResult]]) -> RunResult:
    """Dispatch the parent and its fallback run at once; the parent's result (the
    fallback run's own is in the ledger: ``campaign status`` shows both)."""
    if child is None:
        return await parent
    result, _fallback = await asyncio.gather(parent, dispatch_child(child))
    return result


def as_fallback(entry: TimelineEntry, child: Run) -> TimelineEntry:
    """A fallback run's timeline entry, said as the fallback run's."""
    return dataclasses.replace(entry, what=f"{child.channel.upper()} fallback run "
                                           f"{child.id}: {entry.what}")


def fallback_lines(ledger: Ledger, run_id: int) -> list[str]:
    """What became of the run's fallback run, for the run's summary (none: no lines)."""
    child_id = ledger.fallback_run_of(run_id)
    if child_id is None:
        return []
    child = ledger.get_run(child_id)
    counts = ledger.counts(child_id)
    said = ", ".join(f"{state} {n:,}" for state, n in sorted(counts.items())) or "nothing sent"
    return [f"{child.channel.upper()} fallback: run {child_id} {child.status} ({said})"]
