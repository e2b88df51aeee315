"""How a moment or a duration is said in words: times in a zone with its label, durations as a
person reads them, ISO 8601 UTC for JSON.

The engine's notes, the views, the reports and the commands all say times through these, so
a time reads the same everywhere:

- :func:`local_time`: a moment in the campaign's zone with the zone's label
  (``2026-11-23 09:02 -03:00``, ``2026-11-23 09:02 EST``), never microseconds; ``--json``
  output keeps ISO 8601 UTC instead (:func:`iso_utc`).
- :func:`span`: a duration as a person reads it (``2 days 13 h``, ``4 min``), never
  ``2517 days, 13:50:43.252787``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo


def zone_label(moment: datetime) -> str:
    """The label of an aware moment's zone: its abbreviation when it is a word (``EST``,
    ``UTC``, ``WET``), else its UTC offset (``-03:00``: tzdata names Brazil's zones
    ``-03``, which reads like a number)."""
    name = moment.tzname() or ""
    if name.isalpha():
        return name
    offset = moment.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"


def _zone(zone: str | tzinfo) -> tzinfo:
    """:func:`scheduler.core.units.load_zone`, imported when a time is shown (units builds
    pydantic types: ``campaign --version`` and ``--help`` never need them)."""
    from scheduler.core.units import load_zone

    return load_zone(zone)


def local_time(moment: datetime | None, zone: str | tzinfo, *, seconds: bool = False,
               empty: str = "–") -> str:
    """``moment`` in ``zone`` as ``YYYY-MM-DD HH:MM`` (``:SS`` with ``seconds``) and the
    zone's label; ``empty`` for ``None``. A naive moment is taken as UTC (the ledger's)."""
    if moment is None:
        return empty
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    local = moment.astimezone(_zone(zone))
    shown = local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return f"{shown} {zone_label(local)}"


def clock_time(moment: datetime, zone: str | tzinfo, *, seconds: bool = True) -> str:
    """The time of day only, with the zone's label (``09:02:15 -03:00``), for log lines."""
    local = moment.astimezone(_zone(zone))
    return f"{local.strftime('%H:%M:%S' if seconds else '%H:%M')} {zone_label(local)}"


def iso_utc(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC, whole seconds (``2026-11-23T12:02:57+00:00``): the ``--json`` form."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def span(duration: timedelta | float) -> str:
    """A duration in words (``45 s``, ``12 min``, ``3 h 05 min``, ``2517 days 13 h``)."""
    seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
    seconds = max(0, round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days:,} days {hours} h"


def written_duration(seconds: float) -> str:
    """A delay as a campaign file writes it (``24 h``, ``10 min``, ``1 h 30 min``, ``3 s``):
    the retry rules' and the steps' conditions' reasons say their waits so."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] if hours else []
    if minutes:
        parts.append(f"{minutes} min")
    if secs or not parts:
        parts.append(f"{secs} s")
    return " ".join(parts)
