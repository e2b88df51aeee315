"""Units of a campaign's options, read from text once: rates, durations, jitter, clock times,
windows, days and time zones.

Every parser takes what a person writes in a campaign file and returns plain numbers
(seconds, events per second, minutes after midnight, weekday numbers with Monday 0); every
mistake is a :class:`UnitError` naming the value and an example. The definition keeps each
value as a small frozen value (:class:`Rate`, :class:`Jitter`, :class:`ClockTime`,
:class:`ClockWindow`, :class:`Days`) that holds both the text (stored in the definition
snapshot, shown to people) and its parsed numbers, so nothing is parsed twice. Pure: no
clock, no scheduler imports but the error tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, tzinfo
from typing import Any, ClassVar, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from scheduler.core.errors import SchedulerError


class UnitError(SchedulerError, ValueError):
    """A rate, duration, jitter, clock time, window, day list or time zone is not readable.

    A :class:`ValueError` too, so pydantic reports it as the field's error.
    """


_SECONDS = {
    "ms": 0.001,
    "msec": 0.001,
    "millisecond": 0.001,
    "milliseconds": 0.001,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/|per\s+)\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$")
_CLOCK = re.compile(r"^\s*([01]?\d|2[0-4]):([0-5]\d)\s*$")
_DAY_NUMBERS = {
    "mon": 0, "monday": 0, "seg": 0, "segunda": 0,
    "tue": 1, "tuesday": 1, "ter": 1, "terca": 1, "terça": 1,
    "wed": 2, "wednesday": 2, "qua": 2, "quarta": 2,
    "thu": 3, "thursday": 3, "qui": 3, "quinta": 3,
    "fri": 4, "friday": 4, "sex": 4, "sexta": 4,
    "sat": 5, "saturday": 5, "sab": 5, "sáb": 5, "sabado": 5, "sábado": 5,
    "sun": 6, "sunday": 6, "dom": 6, "domingo": 6,
}  # fmt: skip
ALL_DAYS = frozenset(range(7))


def parse_duration(text: str) -> float:
    """Seconds of ``"500ms"``, ``"2s"``, ``"30m"``, ``"1h30m"``, ``"2d"`` (``"0"`` is 0)."""
    spec = text.strip().lower()
    if spec in {"0", "none", ""}:
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(spec):
        if spec[pos : match.start()].strip() or match.group(2) not in _SECONDS:
            break
        total += float(match.group(1)) * _SECONDS[match.group(2)]
        pos = match.end()
    else:
        if pos and not spec[pos:].strip():
            return total
    raise UnitError(f"duration {text!r}: expected e.g. 500ms, 2s, 5m, 1h30m, 1d")


def parse_rate(text: str) -> float:
    """Events per second of ``"30/min"``, ``"2/s"``, ``"1000/h"``, ``"500/day"``, ``"10/5min"``."""
    match = _RATE.match(text.lower())
    if not match or match.group(3) not in _SECONDS:
        raise UnitError(f"rate {text!r}: expected COUNT/UNIT, e.g. 30/min, 2/s, 1000/h, 500/day")
    count = float(match.group(1))
    per = float(match.group(2) or 1) * _SECONDS[match.group(3)]
    if count <= 0 or per <= 0:
        raise UnitError(f"rate {text!r}: must be more than zero")
    return count / per


def parse_jitter(text: str) -> tuple[float, float]:
    """(min, max) seconds of ``"2s-8s"``, ``"500ms-1s"``, ``"3s"`` (fixed) or ``"0"`` (none)."""
    parts = text.split("-")
    if len(parts) > 2:
        raise UnitError(f"jitter {text!r}: expected MIN-MAX, e.g. 2s-8s")
    try:
        low, high = parse_duration(parts[0]), parse_duration(parts[-1])
    except UnitError:
        raise UnitError(f"jitter {text!r}: expected MIN-MAX, e.g. 2s-8s or 500ms-1s") from None
    if low > high:
        raise UnitError(f"jitter {text!r}: the minimum is above the maximum")
    return low, high


def parse_clock(text: str) -> int:
    """Minutes after local midnight of ``"HH:MM"`` (``"24:00"`` is 1440, the day's end)."""
    match = _CLOCK.match(text)
    if not match or (match.group(1) == "24" and match.group(2) != "00"):
        raise UnitError(f"time {text!r}: expected HH:MM between 00:00 and 24:00")
    return int(match.group(1)) * 60 + int(match.group(2))


def parse_window(text: str) -> tuple[int, int]:
    """``"09:00-20:00"`` → (540, 1200) minutes; an overnight window has start > end.

    Equal ends (``"00:00-00:00"``) mean the whole day; a window cannot open at 24:00.
    """
    parts = text.split("-")
    if len(parts) != 2:
        raise UnitError(f"window {text!r}: expected HH:MM-HH:MM, e.g. 09:00-20:00")
    opens, closes = parse_clock(parts[0]), parse_clock(parts[1])
    if opens == 1440:
        raise UnitError(f"window {text!r}: a window cannot open at 24:00")
    return opens, closes


def parse_days(text: str) -> frozenset[int]:
    """Weekday numbers (Monday 0) of ``"mon-sat"``, ``"mon,wed,fri"``, ``"fri-mon"``, ``"*"``
    (Portuguese names too: ``"seg-sab"``)."""
    spec = text.strip().lower()
    if spec in {"*", "all", "daily", "every day", "todos"}:
        return ALL_DAYS
    days: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            raise UnitError(f"days {text!r}: empty item")
        ends = [p.strip() for p in part.split("-")]
        if len(ends) > 2 or any(e not in _DAY_NUMBERS for e in ends):
            raise UnitError(
                f"days {text!r}: {part!r} is not a day or a range of days (e.g. mon-sat)"
            )
        first, last = _DAY_NUMBERS[ends[0]], _DAY_NUMBERS[ends[-1]]
        day = first
        days.add(day)
        while day != last:  # ranges wrap around the week: "fri-mon"
            day = (day + 1) % 7
            days.add(day)
    return frozenset(days)


def load_zone(name: str | tzinfo) -> tzinfo:
    """A :class:`zoneinfo.ZoneInfo` for an IANA name (a tzinfo is returned as is)."""
    if isinstance(name, tzinfo):
        return name
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnitError(f"time zone {name!r} is not an IANA zone name") from None


def day_start(now: datetime, zone: str | tzinfo) -> datetime:
    """Midnight of ``now``'s day in ``zone``, in UTC."""
    local = now.astimezone(load_zone(zone))
    return datetime.combine(local.date(), time(), tzinfo=local.tzinfo).astimezone(UTC)



# ---------------------------------------------------------------- values kept with their text


@dataclass(frozen=True)
class _Text:
    """A value read from ``text``; ``str()`` gives the text back, pydantic reads and writes it
    as that text (a non-text value is pydantic's ``string_type`` error)."""

    text: str
    #: How the value is written, for the JSON Schema (``campaign schema``) and the docs.
    EXAMPLES: ClassVar[tuple[str, ...]] = ()

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str) -> Self:
        """The value of ``text``, or :class:`UnitError`."""
        raise NotImplementedError  # pragma: no cover

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any,
                                     handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def read(value: Any) -> Any:
            if isinstance(value, cls):
                return value
            if not isinstance(value, str):
                raise PydanticCustomError("string_type", "Input should be a valid string")
            return cls.parse(value)

        return core_schema.no_info_plain_validator_function(
            read, serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema()))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """A string, with examples of how it is written (the parser checks the rest)."""
        return {"type": "string", "examples": list(cls.EXAMPLES)}


@dataclass(frozen=True)
class Rate(_Text):
    """A rate such as ``"30/min"``: ``per_s`` events per second."""

    EXAMPLES = ("30/min", "2/s", "600/h")

    per_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Rate:
        """The rate of ``text`` (see :func:`parse_rate`)."""
        return cls(text, parse_rate(text))


@dataclass(frozen=True)
class Jitter(_Text):
    """A pause drawn after each send, such as ``"2s-8s"``: ``low_s`` to ``high_s`` seconds."""

    EXAMPLES = ("2s-8s", "0", "500ms-2s")

    low_s: float = 0.0
    high_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Jitter:
        """The jitter of ``text`` (see :func:`parse_jitter`)."""
        return cls(text, *parse_jitter(text))

    @property
    def bounds_s(self) -> tuple[float, float]:
        """(min, max) seconds."""
        return self.low_s, self.high_s


@dataclass(frozen=True)
class ClockTime(_Text):
    """A local wall-clock time such as ``"20:00"``: ``minutes`` after midnight."""

    EXAMPLES = ("20:00",)

    minutes: int = 0

    @classmethod
    def parse(cls, text: str) -> ClockTime:
        """The clock time of ``text`` (see :func:`parse_clock`)."""
        return cls(text, parse_clock(text))


@dataclass(frozen=True)
class ClockWindow(_Text):
    """A daily window such as ``"09:00-20:00"``: opens and closes, minutes after midnight."""

    EXAMPLES = ("09:00-20:00", "22:00-06:00")

    opens_min: int = 0
    closes_min: int = 0

    @classmethod
    def parse(cls, text: str) -> ClockWindow:
        """The window of ``text`` (see :func:`parse_window`)."""
        return cls(text, *parse_window(text))


@dataclass(frozen=True)
class Days(_Text):
    """Days of the week such as ``"mon-sat"``: ``weekdays`` numbers, Monday 0."""

    EXAMPLES = ("mon-sat", "mon-fri", "*")

    weekdays: frozenset[int] = ALL_DAYS

    @classmethod
    def parse(cls, text: str) -> Days:
        """The days of ``text`` (see :func:`parse_days`)."""
        return cls(text, parse_days(text))
