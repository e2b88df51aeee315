"""The consent list (migration 0022): who agreed to be sent to, on which channel, when, how.

``campaign consent import FILE`` stores one row per CSV record
(:mod:`scheduler.campaign.consent_import`): the number (digits, country code first), the
channel, when consent was given, the text or version the person agreed to, and its source
(the file and the row). A campaign with ``[recipients] consent = "required"`` and no
``consent_column`` reads the newest record of each number for its channel
(:func:`consent_bases`). Kept apart from :mod:`scheduler.ledger.models` like the privacy
audit's table; ``person export`` and ``forget`` read and erase it by ``number``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Index, Table, Text, insert, select
from sqlmodel import Field

from scheduler.ledger import access
from scheduler.ledger.table_parts import LedgerTable


class Consent(LedgerTable, table=True):
    """One consent record: a number agreed to ``channel`` at ``given_at``."""

    __tablename__ = "consents"
    __table_args__ = (Index("ix_consents_number_channel", "number", "channel"),)

    id: int | None = Field(default=None, primary_key=True)
    number: str
    channel: str
    given_at: datetime
    text: str | None = Field(default=None, sa_type=Text)
    version: str | None = None
    source_file: str
    source_row: int
    imported_at: datetime


def _table(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel for table=True
    assert isinstance(table, Table)
    return table


consents = _table(Consent)


def store_consents(engine: Engine, records: Iterable[Mapping[str, Any]]) -> int:
    """Store the records in one transaction (all or none); how many."""
    rows = [dict(r) for r in records]
    if not rows:
        return 0
    with access.transaction(engine, "store consent records") as conn:
        conn.execute(insert(consents), rows)
    return len(rows)


def basis_text(row: Any) -> str:
    """What a delivery's report says of an imported consent record."""
    agreed = row.version if row.version else (row.text or "")
    what = f"; {agreed}" if agreed else ""
    return (f"imported {row.given_at:%Y-%m-%d %H:%M} UTC{what} "
            f"({row.source_file}, row {row.source_row})")


def consent_bases(engine: Engine, channel: str) -> dict[str, str]:
    """Number -> the basis of its newest consent for ``channel`` (report text)."""
    c = consents.c
    out: dict[str, str] = {}
    with access.read(engine, "read consent records") as conn:
        for row in conn.execute(select(consents).where(c.channel == channel)
                                .order_by(c.given_at, c.id)):
            out[row.number] = basis_text(row)
    return out
