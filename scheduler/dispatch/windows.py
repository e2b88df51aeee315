"""Send windows: when a campaign may send, in a time zone, by local wall-clock time.

A window is a daily interval (``"09:00-20:00"``) on some days of the week (``"mon-sat"``,
``"mon,wed,fri"``, Portuguese ``"seg-sab"`` too; the texts are read by
:mod:`scheduler.core.units`). An overnight window (``"22:00-06:00"``)
belongs to the day it opens on: Saturday's 22:00-06:00 runs into Sunday morning. Equal start
and end (``"00:00-00:00"``) means the whole day. Every instant is computed with
:mod:`zoneinfo`, so DST days are right: a 09:00-20:00 window opens at 09:00 local on both
sides of a change. A local time that does not exist (inside a spring-forward gap) is taken
as PEP 495 ``fold=0`` reads it, i.e. shifted forward by the gap; an ambiguous one is its
first occurrence. All comparisons are made in UTC. Pure functions: no clock is read here.
A window with a holiday calendar (:mod:`scheduler.campaign.holidays`) does not open on a
holiday: the whole local day is outside it (an overnight window ends at the holiday's
midnight).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache

from scheduler.campaign.holidays import HolidayCalendar, calendar_for
from scheduler.core.units import UnitError, load_zone, parse_clock, parse_days, parse_window
from scheduler.settings.run import WindowOptions


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
    """A daily send window on some weekdays, by wall-clock time in ``tz``.

    ``start`` and ``end`` are ``"HH:MM"`` or minutes after midnight; ``days`` is text such
    as ``"mon-sat"`` or weekday numbers (Monday 0); ``holidays`` the days it stays shut.
    """

    start: str | int = "00:00"
    end: str | int = "00:00"
    days: str | Iterable[int] = "*"
    tz: str | tzinfo = "UTC"
    #: holidays on which the window stays shut (None: none)
    holidays: HolidayCalendar | None = None
    _start: int = field(init=False, repr=False, compare=False)
    _end: int = field(init=False, repr=False, compare=False)
    _days: frozenset[int] = field(init=False, repr=False, compare=False)
    _zone: tzinfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        start = self.start if isinstance(self.start, int) else parse_clock(self.start)
        end = self.end if isinstance(self.end, int) else parse_clock(self.end)
        if start == 1440:
            raise UnitError("a window cannot start at 24:00")
        if end == start:  # the whole day
            end = start + 1440
        elif end < start:  # overnight: ends on the next day
            end += 1440
        days = parse_days(self.days) if isinstance(self.days, str) else frozenset(self.days)
        object.__setattr__(self, "_start", start)
        object.__setattr__(self, "_end", end)
        object.__setattr__(self, "_days", days)
        object.__setattr__(self, "_zone", load_zone(self.tz))

    @classmethod
    def parse(cls, window: str, days: str = "*", tz: str | tzinfo = "UTC") -> SendWindow:
        """Build from the definition's ``window = "09:00-20:00"`` form."""
        start, end = parse_window(window)
        return cls(start, end, days, tz)

    @classmethod
    def of(cls, window: WindowOptions | None, tz: str | tzinfo) -> SendWindow | None:
        """The window of a run's options (``None``: the run has no window)."""
        if window is None:
            return None
        return cls(window.opens_min, window.closes_min, window.weekdays, tz,
                   calendar_for(window.holidays))

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

    def with_holidays(self, calendar: HolidayCalendar | None) -> SendWindow:
        """The same window shut on ``calendar``'s holidays as well (a recipient's state)."""
        return replace(self, holidays=calendar)

    def holiday_on(self, day: date) -> str | None:
        """The name of the holiday on local ``day`` (None: a working day or no calendar)."""
        return None if self.holidays is None else self.holidays.name_on(day)

    def holiday_dates(self, start: datetime, end: datetime) -> list[dict[str, str]]:
        """``{"date", "name"}`` of each holiday from ``start``'s local day to ``end``'s."""
        out: list[dict[str, str]] = []
        if self.holidays is None:
            return out
        day = start.astimezone(self._zone).date()
        while day <= end.astimezone(self._zone).date():
            name = self.holidays.name_on(day)
            if name is not None:
                out.append({"date": day.isoformat(), "name": name})
            day += timedelta(days=1)
        return out

    def holidays_between(self, start: datetime, end: datetime) -> list[str]:
        """Names of the holidays on the local days from ``start``'s to the day before
        ``end``'s (what a wait from ``start`` until ``end`` is partly for), in order."""
        names: list[str] = []
        if self.holidays is None:
            return names
        day = start.astimezone(self._zone).date()
        last = max(day, end.astimezone(self._zone).date() - timedelta(days=1))
        while day <= last:
            name = self.holidays.name_on(day)
            if name is not None and name not in names:
                names.append(name)
            day += timedelta(days=1)
        return names

    def _interval(self, day: date) -> tuple[datetime, datetime]:
        return _local(day, self._start, self._zone), _local(day, self._end, self._zone)

    def _intervals_from(
        self, dt: datetime, days_ahead: int = 16
    ) -> Iterator[tuple[datetime, datetime]]:
        first = dt.astimezone(self._zone).date() - timedelta(days=1)
        for offset in range(days_ahead):
            day = first + timedelta(days=offset)
            if day.weekday() in self._days and self.holiday_on(day) is None:
                opens, closes = self._interval(day)
                if self._end > 1440 and self.holiday_on(day + timedelta(days=1)):
                    closes = min(closes, _local(day + timedelta(days=1), 0, self._zone))
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

    def closed_since(self, dt: datetime) -> datetime | None:
        """When the window last closed at or before ``dt`` (``dt``'s zone); ``None`` when it
        is open at ``dt`` or was not open in the week before."""
        if self.is_open(dt):
            return None
        utc = dt.astimezone(UTC)
        ends = [closes for _opens, closes in self._intervals_from(utc - timedelta(days=8), 10)
                if closes <= utc]
        return max(ends).astimezone(dt.tzinfo) if ends else None

    def closes_at(self, dt: datetime) -> datetime | None:
        """When the window open at ``dt`` closes (``dt``'s zone); ``None`` when it is closed."""
        found = self._containing(dt)
        return None if found is None else found[1].astimezone(dt.tzinfo)


@lru_cache(maxsize=65536)
def zone_for_number(to: str, default: str = "UTC") -> str:
    """IANA zone of an international number (digits, no ``+``), else ``default``.

    phonenumbers' timezone module maps number prefixes to zones (Brazil's DDD 68 is
    America/Rio_Branco, DDD 11 America/Sao_Paulo); the first zone is taken when several fit.
    phonenumbers is imported here, once per number not yet cached: the readers of the ledger
    (``campaign status``) import this module for its windows and never look a number up.
    """
    import phonenumbers
    from phonenumbers import timezone as pn_timezone

    try:
        number = phonenumbers.parse("+" + to)
    except phonenumbers.NumberParseException:
        return default
    zones = [z for z in pn_timezone.time_zones_for_number(number) if z != "Etc/Unknown"]
    return zones[0] if zones else default


@lru_cache(maxsize=1024)
def zone_for_region(region: str, default: str = "UTC") -> str:
    """IANA zone of a phone region code (``"BR"`` → ``"America/Sao_Paulo"``), else ``default``."""
    import phonenumbers
    from phonenumbers import timezone as pn_timezone

    example = phonenumbers.example_number(region) if region else None
    if example is None:
        return default
    zones = [z for z in pn_timezone.time_zones_for_number(example) if z != "Etc/Unknown"]
    return zones[0] if zones else default
