"""Time helpers: the one module that reads the machine's clocks, and the clock type injected
wherever time matters.

Every other module asks here: :func:`utcnow` (the wall clock, for dates), :func:`monotonic`
and :func:`seconds_since` (a clock that never goes back, for durations, deadlines and
cadences), :func:`local_zone` (the machine's zone now). ``tests/test_architecture.py``
checks that no other module reads a clock. Code whose timing a test fixes takes a
:data:`Clock` (or a monotonic ``Callable[[], float]``) instead, defaulting to these.

The ledger stores aware datetimes (SQLModel's ``UTCDateTime``) and returns them in UTC.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo

#: A clock returns an aware UTC datetime; inject one wherever time matters.
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The real clock: now, aware, in UTC."""
    return datetime.now(UTC)


def epoch_s() -> float:
    """The real clock as seconds since the epoch (for ``Retry-After`` dates and the like)."""
    return utcnow().timestamp()


def monotonic() -> float:
    """Seconds of a clock that never goes back (for measuring real durations and cadences,
    never for dates)."""
    return time.monotonic()


def seconds_since(start: float) -> float:
    """Seconds elapsed since ``start``, a reading of :func:`monotonic`."""
    return monotonic() - start


def local_zone() -> tzinfo:
    """This machine's zone as it is now (UTC when the machine does not say)."""
    zone = datetime.now().astimezone().tzinfo
    return zone if zone is not None else UTC


class SimulatedClock:
    """A clock that only moves when someone sleeps on it (rehearsals and tests)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Advance simulated time by ``seconds`` and let other tasks run."""
        import asyncio
        from datetime import timedelta

        self.now += timedelta(seconds=max(seconds, 0.0))
        await asyncio.sleep(0)
