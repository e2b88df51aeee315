"""When a failed delivery is tried again: exponential back-off with jitter, up to a horizon.

A pure function of the try's number, the event's time, now and a random draw, tested at
fixed datetimes (the worker passes its clock and ``random.random``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta


def retry_delay(attempts: int, *, first_s: float, max_s: float,
                draw: Callable[[], float]) -> timedelta:
    """The wait after the ``attempts``-th failed try (1: the first): ``first_s`` doubled
    each time, capped at ``max_s``, then between half and all of it (``draw()`` in [0, 1))
    so that many deliveries failing together do not come back together."""
    full = min(max_s, first_s * 2.0 ** max(0, attempts - 1))
    return timedelta(seconds=full / 2 + draw() * full / 2)


def next_attempt(attempts: int, created_at: datetime, now: datetime, *, first_s: float,
                 max_s: float, horizon: timedelta,
                 draw: Callable[[], float]) -> datetime | None:
    """When to try again after ``attempts`` failed tries of an event written at
    ``created_at``; None once the horizon (counted from the event) has passed: the delivery
    has failed. The last try falls on the horizon itself."""
    end = created_at + horizon
    if now >= end:
        return None
    return min(now + retry_delay(attempts, first_s=first_s, max_s=max_s, draw=draw), end)
