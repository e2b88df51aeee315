"""How long the dispatcher may wait, and what its timeline says about a long wait.

Pure functions of fixed datetimes, used by :mod:`scheduler.dispatch.dispatcher`:

- a wait never goes past the run's latest send time, so what is not sent expires *at* that
  time (a rehearsal's simulated clock jumps straight to the next due time, which may be
  minutes or a night later, and a window pause would otherwise sleep through it);
- after a crash, the line says what became of the sends left in doubt, and until when
  those still being verified against the service's events keep the run waiting;
- a run sent in the recipients' own time zones (``recipient_timezone = true``) has no
  window of its own to pause on: when every remaining delivery waits for its recipient's
  window, the timeline says so instead of showing a silent gap of hours.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, tzinfo

from scheduler.core.time_words import clock_time, span

#: A wait for recipients' windows shorter than this is pacing, not worth a timeline line.
RECIPIENT_WAIT_NOTED = timedelta(minutes=10)


def holiday_words(names: list[str]) -> str:
    """What a wait is for when holidays are in it: ``" (holiday: Natal)"``; ``""`` when
    none is."""
    if not names:
        return ""
    return f" (holiday: {', '.join(names)})" if len(names) == 1 else \
        f" (holidays: {', '.join(names)})"


def capped(until: datetime | None, latest: datetime | None) -> datetime | None:
    """``until``, or the latest send time when that comes first (``None``: no bound)."""
    if latest is None:
        return until
    if until is None:
        return None
    return min(until, latest)


def deferred_to(opens: Mapping[datetime, int], due: datetime | None) -> int:
    """How many deliveries were held back until ``due`` (within a second) for their
    recipient's window; ``opens`` counts the deferrals by the time each window opens."""
    if due is None:
        return 0
    return sum(n for at, n in opens.items() if abs((at - due).total_seconds()) <= 1.0)


def recipients_wait_note(now: datetime, next_due: datetime | None, waiting: int, *,
                         deferred: int, zone: tzinfo, zone_name: str,
                         latest: datetime | None = None) -> str | None:
    """The timeline line of a long wait caused by recipients' own windows, or ``None``.

    ``waiting`` is how many deliveries are still to send; ``next_due`` when the first of
    them may go; ``deferred`` how many were held back until exactly then for their
    recipient's window (:func:`deferred_to`). No line for a short wait, or when the first
    due delivery was not deferred (the wait is then a step's delay or a retry, not a time
    zone).
    """
    if deferred <= 0 or waiting <= 0 or next_due is None:
        return None
    if next_due - now < RECIPIENT_WAIT_NOTED:
        return None
    local = next_due.astimezone(zone)
    if latest is not None and next_due >= latest:
        ends = latest.astimezone(zone)
        return (f"recipients' own time zones: no recipient's window is open; {waiting:,} "
                f"deliveries wait, but the latest send time {ends:%Y-%m-%d %H:%M} "
                f"({zone_name}) comes first")
    return (f"recipients' own time zones: no recipient's window is open; {waiting:,} "
            f"deliveries wait, the first until {local:%Y-%m-%d %H:%M} ({zone_name})")


def recovered_note(counts: Mapping[str, int], now: datetime, until: datetime | None,
                   zone: tzinfo) -> str:
    """The timeline line of a start after a crash: what became of the sends a previous
    process left in doubt (``counts`` by outcome: sent, unknown, requeued, verifying), and
    until when those being verified keep the run waiting."""
    said = {
        "sent": "proven sent by the service's events",
        "unknown": "left unknown (no proof; never sent again automatically)",
        "requeued": "queued again (at-least-once)",
    }
    parts = [f"{counts[key]:,} {text}" for key, text in said.items() if counts.get(key)]
    if counts.get("verifying"):
        wait = f" until {clock_time(until, zone)} (up to {span(until - now)})" if until else ""
        parts.append(f"{counts['verifying']:,} being verified against the service's "
                     f"events{wait}")
    return "recovered after a crash: " + "; ".join(parts)
