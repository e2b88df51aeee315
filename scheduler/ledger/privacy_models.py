"""The privacy audit's table (migration 0021): each export or erasure of a person's data.

Kept apart from :mod:`scheduler.ledger.models` like the inbox's and the experiments'
tables. A row says who (the OS user, the API token's name or the dashboard's user), when,
why, what was done (``export`` or ``forget``) and to whom, by the person's pseudonym
(``erased:<id>``, a keyed hash: never the number in clear), with the rows touched per table
(JSON).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Table, Text
from sqlmodel import Field

from scheduler.ledger.table_parts import LedgerTable


class PrivacyAudit(LedgerTable, table=True):
    """One use of ``person export`` or ``person forget``: who, when, why, on whom."""

    __tablename__ = "privacy_audit"

    id: int | None = Field(default=None, primary_key=True)
    action: str
    subject: str
    who: str
    via: str
    reason: str | None = Field(default=None, sa_type=Text)
    at: datetime
    counts: str = Field(default="{}", sa_type=Text)


def _table(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel for table=True
    assert isinstance(table, Table)
    return table


privacy_audit = _table(PrivacyAudit)
