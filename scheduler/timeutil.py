"""Time helpers: the clock type injected wherever time matters.

The ledger stores aware datetimes (SQLModel's ``UTCDateTime``) and returns them in UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: A clock returns an aware UTC datetime; inject one wherever time matters.
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The real clock: now, aware, in UTC."""
    return datetime.now(UTC)


def iso_ms(moment: datetime) -> str:
    """ISO 8601 UTC with millisecond precision and a ``Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
