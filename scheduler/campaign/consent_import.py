"""Read a consent list: ``campaign consent import FILE`` (CSV, UTF-8, ``,`` or ``;``).

Columns (any case and accents): the number (``number``, ``numero``, ``telefone``,
``phone``), ``channel`` (whatsapp, sms, voice, calls), ``time`` (when consent was given: an
ISO date or date-time, read in ``--timezone`` when it has no offset), and what the person
agreed to: ``text`` (or ``source``) and/or ``version``. Every row is checked before anything
is stored: a bad file raises :class:`ConsentFileError` naming the file, the row and the
field of every problem, and nothing is written.
"""

from __future__ import annotations

import csv
import unicodedata
from datetime import UTC, datetime, time, tzinfo
from pathlib import Path
from typing import Any, get_args

from scheduler.campaign.phones import PhoneNormalizer
from scheduler.core.errors import SchedulerError
from scheduler.settings.run import Channel

NUMBER_NAMES = ("number", "numero", "telefone", "phone", "celular")
TEXT_NAMES = ("text", "texto", "source", "fonte")
VERSION_NAMES = ("version", "versao")
TIME_NAMES = ("time", "quando", "data", "given_at")
CHANNELS = get_args(Channel)
#: At most this many problems are listed.
MAX_LISTED = 20


class ConsentFileError(SchedulerError):
    """A consent file that cannot be imported (nothing was stored)."""


def _fold(name: str) -> str:
    text = unicodedata.normalize("NFKD", name.strip().lower())
    return "".join(ch for ch in text if not unicodedata.combining(ch)).replace(" ", "_")


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    folded = [_fold(h) for h in header]
    return next((folded.index(n) for n in names if n in folded), None)


def _when(text: str, zone: tzinfo) -> datetime:
    value = datetime.fromisoformat(text) if "T" in text or ":" in text else \
        datetime.combine(datetime.fromisoformat(text).date(), time())
    return (value if value.utcoffset() is not None else value.replace(tzinfo=zone)
            ).astimezone(UTC)


def read_consent_file(path: Path, *, zone: tzinfo, region: str = "BR",
                      now: datetime) -> list[dict[str, Any]]:
    """The records of a consent file, ready for :func:`scheduler.ledger.consent.store_consents`."""
    label = path.name
    rows = _read_rows(path, label)
    cols = _columns(rows[0], label)
    if len(rows) < 2:
        raise ConsentFileError(f"{label}: the file has a header and no rows")
    normalizer = PhoneNormalizer(region)
    problems: list[str] = []
    records: list[dict[str, Any]] = []
    for number, row in enumerate(rows[1:], start=1):
        if not any(v.strip() for v in row):
            continue
        cells = {key: row[index].strip() if index is not None and index < len(row) else ""
                 for key, index in cols.items()}
        record = _record(cells, f"{label}: row {number}", normalizer, zone, now, problems)
        if record is not None:
            records.append(record | {"source_file": str(path), "source_row": number,
                                     "imported_at": now})
    if problems:
        more = len(problems) - MAX_LISTED
        raise ConsentFileError("\n".join(problems[:MAX_LISTED]
                                         + ([f"… and {more} more"] if more > 0 else []))
                               + "\nnothing was imported")
    return records


def _read_rows(path: Path, label: str) -> list[list[str]]:
    """The file's rows, header first (``;`` when the header has more of them than ``,``)."""
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConsentFileError(f"{path}: cannot be read ({exc})") from None
    lines = raw.splitlines()
    if not lines:
        raise ConsentFileError(f"{label}: the file is empty")
    dialect = ";" if lines[0].count(";") > lines[0].count(",") else ","
    return list(csv.reader(lines, delimiter=dialect))


def _columns(header: list[str], label: str) -> dict[str, int | None]:
    """Where each field is in ``header``; an error naming the columns it lacks."""
    cols = {key: _column(header, names) for key, names in (
        ("number", NUMBER_NAMES), ("channel", ("channel", "canal")), ("time", TIME_NAMES),
        ("text", TEXT_NAMES), ("version", VERSION_NAMES))}
    missing = [k for k in ("number", "channel", "time") if cols[k] is None]
    if missing or (cols["text"] is None and cols["version"] is None):
        need = missing + ([] if cols["text"] is not None or cols["version"] is not None
                          else ["text or version"])
        raise ConsentFileError(f"{label}: header: no column {', '.join(need)} (found: "
                               f"{', '.join(header)})")
    return cols


def _record(cells: dict[str, str], where: str, normalizer: PhoneNormalizer, zone: tzinfo,
            now: datetime, problems: list[str]) -> dict[str, Any] | None:
    """One row's consent (number, channel, time, what was agreed to); its problems go to
    ``problems`` (None when it has one that leaves no record)."""
    digits = normalizer.normalize(cells["number"]).digits
    if not digits:
        problems.append(f"{where}: number {cells['number']!r} is not a valid number")
    channel = cells["channel"].lower()
    if channel not in CHANNELS:
        problems.append(f"{where}: channel {cells['channel']!r}: expected one of "
                        f"{', '.join(CHANNELS)}")
    given: datetime | None = None
    try:
        given = _when(cells["time"], zone)
    except ValueError:
        problems.append(f"{where}: time {cells['time']!r}: expected an ISO date or "
                        "date-time (2026-03-01 or 2026-03-01T10:00:00-03:00)")
    if given is not None and given > now:
        problems.append(f"{where}: time {cells['time']!r} is in the future")
    text, version = cells["text"] or None, cells["version"] or None
    if text is None and version is None:
        problems.append(f"{where}: text/version: say what the person agreed to")
    if digits and given is not None and channel in CHANNELS:
        return {"number": digits, "channel": channel, "given_at": given, "text": text,
                "version": version}
    return None
