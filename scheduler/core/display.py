"""How the terminal shows values: times with their zone, durations in words, outside text
made harmless, tables that fit the width.

Every command prints through these helpers, so a new command reads like the others:

- :func:`local_time`: a moment in the campaign's zone with the zone's label
  (``2026-11-23 09:02 -03:00``, ``2026-11-23 09:02 EST``), never microseconds; ``--json``
  output keeps ISO 8601 UTC instead (:func:`iso_utc`).
- :func:`span`: a duration as a person reads it (``2 days 13 h``, ``4 min``), never
  ``2517 days, 13:50:43.252787``.
- :func:`clean`: text that came from outside (webhook events, CSV cells, service errors)
  with its control characters shown as escapes (``\\x1b[31m``) and rich markup escaped,
  so an ANSI sequence in a ``sessionId`` cannot recolour or rewrite the terminal
  (:func:`clean_markup` when the text goes inside rich markup).
- :func:`table`: a rich table whose columns wrap (fold) instead of being cut at the
  console's width.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table or markup is made: the engine's notes
    from rich.table import Table  # use this module's times without it

#: Control characters (C0 but tab and newline, DEL, C1), shown as escapes by :func:`clean`.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """Outside text made safe to print (with ``markup=False``, or inside ``Text``): control
    characters shown as ``\\xNN`` escapes."""
    return _CONTROL.sub(_escaped, str(text))


def clean_markup(text: object) -> str:
    """:func:`clean`, with rich markup escaped too: for text placed inside markup."""
    from rich.markup import escape

    return escape(clean(text))


def table(*columns: str, title: str | None = None, **options: Any) -> Table:
    """A table whose cells wrap (fold) within the console's width instead of being cut;
    ``options`` go to :class:`rich.table.Table` (``show_edge=False``, ...)."""
    from rich.table import Table

    shown = Table(title=title, **options)
    for name in columns:
        shown.add_column(name, overflow="fold")
    return shown


#: Query parameters whose values are secrets (the receiver's ``?token=``, keys).
_SECRET_PARAMS = frozenset({"token", "key", "apikey", "api_key", "secret", "signature"})


def hide_url_secrets(url: str) -> str:
    """``url`` as shown to people: the values of its secret query parameters (the
    receiver's ``token``) replaced by ``***``; everything else as it was."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [(k, "***" if k.lower() in _SECRET_PARAMS else v)
             for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*")))
