"""What a running run waits for, as ``campaign status`` says it: its sending window, and
its senders at their daily cap or plan limit (which sender, its cap, when it was reached,
when it sends again, in the campaign's zone).

Read from the ledger, so any process can say it: the day's sends per sender (the count the
dispatcher starts from) against the run's ``daily_cap`` and ``plan_limit``. The service's
own plan quota is known only to the process that asked the service (its progress bar and
timeline say it). The sentences are :mod:`scheduler.dispatch.caps`'s, as on the timeline.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduler.core.time_words import iso_utc, local_time, span
from scheduler.core.units import load_zone
from scheduler.dispatch import caps
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import CapWait
from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.run_reads import RunSenderReads
from scheduler.ledger.states import DeliveryState, RunStatus
from scheduler.settings.run import RunOptions


def read_cap_waits(conn: Connection, options: DispatchOptions, now: datetime) -> list[CapWait]:
    """The run's senders at their daily cap or at the campaign's plan limit at ``now``, read
    on ``conn`` (a caller's snapshot)."""
    if options.daily_cap is None and options.plan_limit is None:
        return []
    day_start = now.astimezone(load_zone(options.timezone)).replace(
        hour=0, minute=0, second=0, microsecond=0)
    reads = RunSenderReads(conn)
    sent_today = reads.sent_since(day_start, options.senders)
    return caps.waits_from_counts(options, sent_today, now, reads.nth_send_since)


def read_run_waits(conn: Connection, run: Run, stored: RunOptions, counts: dict[str, int],
                   now: datetime) -> dict[str, Any]:
    """What a running run with deliveries still planned waits for at ``now``, read on
    ``conn`` (a caller's snapshot), with the run's options: ``{"lines": [...], "capped":
    [...]}`` (times in UTC in ``capped``); empty otherwise."""
    if run.status != RunStatus.RUNNING or not counts.get(DeliveryState.PLANNED):
        return {"lines": [], "capped": []}
    options = DispatchOptions.for_run(stored, start=run.started_at or now)
    lines: list[str] = []
    window = options.window
    if window is not None and not options.recipient_timezone and not window.is_open(now):
        opens = window.next_open(now)
        lines.append(f"waiting for the sending window: it opens "
                     f"{local_time(opens, options.timezone)} (in {span(opens - now)})")
    capped = read_cap_waits(conn, options, now)
    lines += caps.describe(capped, options.timezone, now, senders=len(options.senders),
                           latest=options.latest)
    return {"lines": lines,
            "capped": [{"sender": w.sender, "kind": w.kind, "limit": w.limit,
                        "reached_at": iso_utc(w.reached_at),
                        "sends_again": iso_utc(w.sends_again)} for w in capped]}
