"""When a retry may go out: the rule's delay, then its window in the recipient's own zone (pure).

The window maths is :class:`scheduler.dispatch.windows.SendWindow`'s (overnight windows,
DST days); the recipient's zone is found as the dispatcher finds it for a run's window:
from the number's prefix, else its region, else the campaign's zone.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from scheduler.core.units import load_zone
from scheduler.dispatch.windows import SendWindow, zone_for_number, zone_for_region
from scheduler.ledger.rows import WatchedRow
from scheduler.settings.retry_rules import RetryRule, RuleWindow


def recipient_zone(row: WatchedRow, default_zone: str | tzinfo) -> tzinfo:
    """The recipient's own zone: by the number's prefix, else the row's region, else
    ``default_zone`` (the campaign's)."""
    name = zone_for_number(row.to, zone_for_region(row.region or "", ""))
    return load_zone(name) if name else load_zone(default_zone)


def window_of(window: RuleWindow, zone: tzinfo) -> SendWindow:
    """A rule's window read in ``zone``, every day of the week."""
    return SendWindow(window.opens_min, window.closes_min, "*", zone)


def window_text(window: RuleWindow) -> str:
    """``09:00-20:00`` (``00:00-00:00``: the whole day)."""
    def clock(minutes: int) -> str:
        return f"{minutes // 60:02d}:{minutes % 60:02d}"
    return f"{clock(window.opens_min)}-{clock(window.closes_min % 1440)}"


def retry_due(rule: RetryRule, now: datetime, zone: tzinfo) -> tuple[datetime, bool]:
    """The first moment at or after ``now + delay`` inside the rule's window in ``zone``,
    and whether the window moved it (it was closed at ``now + delay``)."""
    earliest = now + timedelta(seconds=rule.delay_s)
    if rule.window is None:
        return earliest, False
    due = window_of(rule.window, zone).next_open(earliest)
    return due, due != earliest
