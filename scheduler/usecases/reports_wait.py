"""After a run's dispatch: keep the receiver up a little for the last delivery reports and
the end of the last calls (SMS, voice, WhatsApp calls), and while the service may still
prove sends in doubt (:func:`hold_for_proof`).

SMS delivery reports and the end of calls arrive after the service took the request (the
sandbox's within a second; a real network's within seconds to minutes). A run that ended
the moment its last bulk request was answered would leave those rows ``accepted`` until
some later process receives their events, so ``campaign run`` waits up to
``report_wait_s`` (a setting) while any is outstanding, saying so; Ctrl-C stops waiting, and
reports that come later are applied by whichever receiver of the project gets them
(``campaign serve`` or ``campaign receiver``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console

from scheduler.core.time_words import clock_time
from scheduler.core.timeutil import monotonic
from scheduler.dispatch.channels import from_account, has_outcomes, known_channel
from scheduler.dispatch.unknowns import judge_run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.sender_store import SenderStore
from scheduler.ledger.states import DeliveryState

if TYPE_CHECKING:
    from scheduler.dispatch.results import RunResult
    from scheduler.ledger.models import Run
    from scheduler.settings.load import Settings

#: States of SMS and voice rows whose final report has not come yet.
AWAITING = (DeliveryState.ACCEPTED, DeliveryState.SENT)


def awaiting_reports(counts: dict[str, int]) -> int:
    """How many rows of a run's state counts still wait for a report."""
    return sum(counts.get(state, 0) for state in AWAITING)


def _calls(channel: str) -> bool:
    known = known_channel(channel)
    return known is not None and known.has_calls


def _outstanding(ledger: Ledger, run_id: int, channel: str) -> int:
    """SMS without a report; calls that have not ended (answered ones included)."""
    if not _calls(channel):
        return awaiting_reports(ledger.counts(run_id))
    mine, _everyone = SenderStore(ledger, run_id).calls_in_progress(
        datetime.min.replace(tzinfo=UTC), channel)
    return mine


async def wait_for_reports(ledger: Ledger, run_id: int, channel: str, stop: asyncio.Event,
                           console: Console, *, wait_s: float, poll_s: float = 0.25) -> int:
    """Wait while reports are outstanding (at most ``wait_s``); how many still are."""
    left = _outstanding(ledger, run_id, channel)
    if left == 0 or wait_s <= 0:
        return left
    what = "calls to end" if _calls(channel) else "delivery reports"
    console.print(f"waiting up to {wait_s:.0f} s for {left} {what} (Ctrl-C stops waiting)")
    deadline = monotonic() + wait_s
    while left and not stop.is_set() and monotonic() < deadline:
        await asyncio.sleep(poll_s)
        left = _outstanding(ledger, run_id, channel)
    if left:
        console.print(f"{left} {what} still outstanding: they are applied when their "
                      "events reach `campaign serve` or `campaign receiver` of this project")
    return left


async def wait_for_events(settings: Settings, ledger: Ledger, run: Run, child: Run | None,
                          result: RunResult, stop: asyncio.Event, console: Console,
                          settle: Callable[[], Awaitable[None]] | None) -> None:
    """With the receiver up after the dispatch: wait for the channels' reports, ``settle``."""
    if has_outcomes(run.channel) and result.status == "completed":
        await wait_for_reports(ledger, run.id or 0, run.channel, stop, console,
                               wait_s=settings.report_wait_s)
    if child is not None and result.status == "completed" and from_account(child.channel):
        assert child.id is not None
        await wait_for_reports(ledger, child.id, child.channel, stop, console,
                               wait_s=settings.report_wait_s)
    if settle is not None:
        await settle()


async def hold_for_proof(ledger: Ledger, run: Run, result: RunResult, stop: asyncio.Event,
                         console: Console,
                         dispatch_now: Callable[[Run], Awaitable[RunResult]], *,
                         horizon: timedelta, resend: bool) -> RunResult:
    """Keep the receiver up while sends of the run are in doubt and the service may still
    prove them (its retry horizon after each), saying so and until when; with ``resend``
    (``resend_unproven = true``) send again exactly those it did not take (see
    ``unknowns``). Ctrl-C, or a run that did not complete, stops listening at once and says
    how to let the proof arrive."""
    assert run.id is not None
    zone = ledger.options(run).timezone
    told: datetime | None = None
    while True:
        verdicts = judge_run(ledger, run.id, ledger.clock(), horizon=horizon)
        going_on = result.status == "completed" and not stop.is_set()
        if resend and going_on and verdicts.unproven:
            n = ledger.requeue(run.id, ["unknown"], ids=verdicts.unproven)
            console.print(f"{n:,} unknown sends were not taken by the service (no proof "
                          "although a receiver listened without a break through its retry "
                          "horizon): sending them again (resend_unproven = true)",
                          highlight=False)
            result = await dispatch_now(ledger.get_run(run.id))
            continue
        if not verdicts.waiting or verdicts.settles_at is None:
            return result
        if not going_on:
            console.print(verdicts.stop_note(zone), style="yellow", highlight=False)
            return result
        if told is None or verdicts.settles_at > told:
            told = verdicts.settles_at
            console.print(f"waiting until {clock_time(told, zone)} for the service's proof "
                          f"of {len(verdicts.waiting):,} sends in doubt: the receiver "
                          "listens until then (Ctrl-C stops it)", highlight=False)
        # past the horizon, a row may wait for the receiver's next heartbeat (every 5 s)
        wait_s = (verdicts.settles_at - ledger.clock()).total_seconds() + 0.5
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=max(wait_s, 1.0))
