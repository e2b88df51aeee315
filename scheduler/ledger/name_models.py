"""The recipients' names table (migration 0023): a name found by its words' starts.

Kept apart from :mod:`scheduler.ledger.models` like the inbox's and the privacy audit's
tables. ``recipient_names`` holds, for each number and each key of its name
(:func:`scheduler.core.person_names.name_keys`: folded, one per word it starts at), the
name as the CSV had it; filled when a run is planned (:mod:`scheduler.ledger.queries.
names`), by the migration for the rows planned before it, and emptied of a person by
``person forget``. Its primary key (number, name_key) keeps one row per key however many
runs named the number; ``ix_recipient_names_key`` finds a prefix with one range. On
PostgreSQL the key is compared in the ``"C"`` collation (byte order, as SQLite's BINARY),
so the same range is a prefix on both.
"""

from __future__ import annotations

from sqlalchemy import Index, String, Table
from sqlmodel import Field, SQLModel

#: The key's type: byte order on PostgreSQL (a prefix is one range), plain elsewhere.
KEY_TYPE = String().with_variant(String(collation="C"), "postgresql")


class RecipientName(SQLModel, table=True):
    """One key of the name a number had in a run's CSV."""

    __tablename__ = "recipient_names"
    #: SQLite: the rows in the primary key's tree (two trees written per key, not three)
    __table_args__ = {"sqlite_with_rowid": False}

    number: str = Field(primary_key=True)
    name_key: str = Field(primary_key=True, sa_type=KEY_TYPE)
    name: str


def _table(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel for table=True
    assert isinstance(table, Table)
    return table


recipient_names = _table(RecipientName)
NAMES_KEY = Index("ix_recipient_names_key", recipient_names.c.name_key)
