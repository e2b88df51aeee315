"""After an SMS, voice or WhatsApp calls run: keep the receiver up a little for the last
delivery reports and the end of the last calls.

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
from datetime import UTC, datetime

from rich.console import Console

from scheduler.core.timeutil import monotonic
from scheduler.dispatch.channels import known_channel
from scheduler.ledger.runs import Ledger
from scheduler.ledger.sender_store import SenderStore
from scheduler.ledger.states import DeliveryState

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
