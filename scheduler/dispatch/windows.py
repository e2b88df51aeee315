"""Send windows: when a campaign may send, in a time zone, by local wall-clock time.

A window is a daily interval (``"09:00-20:00"``) on some days of the week (``"mon-sat"``,
``"mon,wed,fri"``, Portuguese ``"seg-sab"`` too). An overnight window (``"22:00-06:00"``)
belongs to the day it opens on: Saturday's 22:00-06:00 runs into Sunday morning. Equal start
and end (``"00:00-00:00"``) means the whole day. Every instant is computed with
:mod:`zoneinfo`, so DST days are right: a 09:00-20:00 window opens at 09:00 local on both
sides of a change. A local time that does not exist (inside a spring-forward gap) is taken
as PEP 495 ``fold=0`` reads it, i.e. shifted forward by the gap; an ambiguous one is its
first occurrence. All comparisons are made in UTC. Pure functions: no clock is read here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from phonenumbers import timezone as pn_timezone

_DAY_NUMBERS = {
    "mon": 0,
    "monday": 0,
    "seg": 0,
    "segunda": 0,
    "tue": 1,
    "tuesday": 1,
    "ter": 1,
    "terca": 1,
    "terça": 1,
    "wed": 2,
    "wednesday": 2,
    "qua": 2,
    "quarta": 2,
    "thu": 3,
    "thursday": 3,
    "qui": 3,
    "quinta": 3,
    "fri": 4,
    "friday": 4,
    "sex": 4,
    "sexta": 4,
    "sat": 5,
    "saturday": 5,
    "sab": 5,
    "sáb": 5,
    "sabado": 5,
    "sábado": 5,
    "sun": 6,
    "sunday": 6,
    "dom": 6,
    "domingo": 6,
}
_ALL_DAYS = frozenset(range(7))
_CLOCK = re.compile(r"^\s*([01]?\d|2[0-4]):([0-5]\d)\s*$")


def parse_days(text: str) -> frozenset[int]:
    """Weekday numbers (Monday 0) of ``"mon-sat"``, ``"mon,wed,fri"``, ``"fri-mon"``, ``"*"``."""
    spec = text.strip().lower()
    if spec in {"*", "all", "daily", "every day", "todos"}:
        return _ALL_DAYS
    days: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"days {text!r}: empty item")
        ends = [p.strip() for p in part.split("-")]
        if len(ends) > 2 or any(e not in _DAY_NUMBERS for e in ends):
            raise ValueError(
                f"days {text!r}: {part!r} is not a day or a range of days (e.g. mon-sat)"
            )
        first, last = _DAY_NUMBERS[ends[0]], _DAY_NUMBERS[ends[-1]]
        day = first
        days.add(day)
        while day != last:  # ranges wrap around the week: "fri-mon"
            day = (day + 1) % 7
            days.add(day)
    return frozenset(days)


def parse_clock(text: str) -> int:
    """Minutes after local midnight of ``"HH:MM"`` (``"24:00"`` is 1440, the day's end)."""
    match = _CLOCK.match(text)
    if not match or (match.group(1) == "24" and match.group(2) != "00"):
        raise ValueError(f"time {text!r}: expected HH:MM between 00:00 and 24:00")
    return int(match.group(1)) * 60 + int(match.group(2))


def parse_window(text: str) -> tuple[int, int]:
    """``"09:00-20:00"`` → (540, 1200) minutes; an overnight window has start > end."""
    parts = text.split("-")
    if len(parts) != 2:
        raise ValueError(f"window {text!r}: expected HH:MM-HH:MM, e.g. 09:00-20:00")
    return parse_clock(parts[0]), parse_clock(parts[1])


def load_zone(name: str | tzinfo) -> tzinfo:
    """A :class:`zoneinfo.ZoneInfo` for an IANA name (a tzinfo is returned as is)."""
    if isinstance(name, tzinfo):
        return name
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"time zone {name!r} is not an IANA zone name") from None


def _local(day: date, minutes: int, tz: tzinfo) -> datetime:
    """The UTC instant of ``minutes`` after midnight of local ``day`` in ``tz``."""
    extra, minutes = divmod(minutes, 1440)
    wall = datetime.combine(day + timedelta(days=extra), time(minutes // 60, minutes % 60))
    return wall.replace(tzinfo=tz).astimezone(UTC)


def next_local_midnight(dt: datetime, tz: tzinfo) -> datetime:
    """The first instant (UTC) of the local day after ``dt``'s local day in ``tz``."""
    _require_aware(dt)
    return _local(dt.astimezone(tz).date() + timedelta(days=1), 0, tz)


def _require_aware(dt: datetime) -> None:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"{dt!r} is naive: pass a time-zone-aware datetime")


@dataclass(frozen=True)
class SendWindow:
    """A daily send window on some weekdays, by wall-clock time in ``tz``."""

    start: str = "00:00"
    end: str = "00:00"
    days: str = "*"
    tz: str | tzinfo = "UTC"
    _start: int = field(init=False, repr=False, compare=False)
    _end: int = field(init=False, repr=False, compare=False)
    _days: frozenset[int] = field(init=False, repr=False, compare=False)
    _zone: tzinfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        start, end = parse_clock(self.start), parse_clock(self.end)
        if start == 1440:
            raise ValueError("a window cannot start at 24:00")
        if end == start:  # the whole day
            end = start + 1440
        elif end < start:  # overnight: ends on the next day
            end += 1440
        object.__setattr__(self, "_start", start)
        object.__setattr__(self, "_end", end)
        object.__setattr__(self, "_days", parse_days(self.days))
        object.__setattr__(self, "_zone", load_zone(self.tz))

    @classmethod
    def parse(cls, window: str, days: str = "*", tz: str | tzinfo = "UTC") -> SendWindow:
        """Build from the definition's ``window = "09:00-20:00"`` form."""
        parts = window.split("-")
        if len(parts) != 2:
            raise ValueError(f"window {window!r}: expected HH:MM-HH:MM, e.g. 09:00-20:00")
        return cls(parts[0].strip(), parts[1].strip(), days, tz)

    @property
    def zone(self) -> tzinfo:
        """The window's time zone."""
        return self._zone

    @property
    def weekdays(self) -> frozenset[int]:
        """Weekday numbers (Monday 0) on which the window opens."""
        return self._days

    def in_zone(self, tz: str | tzinfo) -> SendWindow:
        """The same window read in another time zone (a recipient's own)."""
        return replace(self, tz=tz)

    def _interval(self, day: date) -> tuple[datetime, datetime]:
        return _local(day, self._start, self._zone), _local(day, self._end, self._zone)

    def _intervals_from(
        self, dt: datetime, days_ahead: int = 9
    ) -> Iterator[tuple[datetime, datetime]]:
        first = dt.astimezone(self._zone).date() - timedelta(days=1)
        for offset in range(days_ahead):
            day = first + timedelta(days=offset)
            if day.weekday() in self._days:
                opens, closes = self._interval(day)
                if closes > opens:  # a DST gap can swallow a short window
                    yield opens, closes

    def _containing(self, dt: datetime) -> tuple[datetime, datetime] | None:
        _require_aware(dt)
        utc = dt.astimezone(UTC)
        for opens, closes in self._intervals_from(utc, 3):
            if opens <= utc < closes:
                return opens, closes
        return None

    def is_open(self, dt: datetime) -> bool:
        """Whether a send may happen at ``dt``."""
        return self._containing(dt) is not None

    def next_open(self, dt: datetime) -> datetime:
        """``dt`` itself when open, else the instant the next window opens (``dt``'s zone)."""
        if self.is_open(dt):
            return dt
        if not self._days:
            raise ValueError("the window has no days")
        utc = dt.astimezone(UTC)
        for opens, _closes in self._intervals_from(utc):
            if opens >= utc:
                return opens.astimezone(dt.tzinfo)
        raise ValueError("no window opens in the next week")  # pragma: no cover

    def closes_at(self, dt: datetime) -> datetime | None:
        """When the window open at ``dt`` closes (``dt``'s zone); ``None`` when it is closed."""
        found = self._containing(dt)
        return None if found is None else found[1].astimezone(dt.tzinfo)


@lru_cache(maxsize=65536)
def zone_for_number(to: str, default: str = "UTC") -> str:
    """IANA zone of an international number (digits, no ``+``), else ``default``.

    phonenumbers' timezone module maps number prefixes to zones (Brazil's DDD 68 is
    America/Rio_Branco, DDD 11 America/Sao_Paulo); the first zone is taken when several fit.
    """
    try:
        number = phonenumbers.parse("+" + to)
    except phonenumbers.NumberParseException:
        return default
    zones = [z for z in pn_timezone.time_zones_for_number(number) if z != "Etc/Unknown"]
    return zones[0] if zones else default


@lru_cache(maxsize=1024)
def zone_for_region(region: str, default: str = "UTC") -> str:
    """IANA zone of a phone region code (``"BR"`` → ``"America/Sao_Paulo"``), else ``default``."""
    example = phonenumbers.example_number(region) if region else None
    if example is None:
        return default
    zones = [z for z in pn_timezone.time_zones_for_number(example) if z != "Etc/Unknown"]
    return zones[0] if zones else default
