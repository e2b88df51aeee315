"""The recipients' names tables (migration 0026): a name found by its words' starts.

Kept apart from :mod:`scheduler.ledger.models` like the inbox's and the privacy audit's
tables. A plan of a million recipients has a few thousand distinct names, so each name is
kept once and its keys once:

- ``person_names``: each distinct name (as the CSV had it) once, with an integer id;
- ``person_name_keys``: ``(name_key, name_id)``, the keys of each distinct name
  (:func:`scheduler.core.person_names.name_keys`: folded, one per word it starts at); its
  primary key finds a prefix with one range. On PostgreSQL the key is compared in the
  ``"C"`` collation (byte order, as SQLite's BINARY), so the range is a prefix on both;
- ``recipient_names``: ``(number, name_id)``, one narrow row per number and name it came
  with (a valid number only); its primary key finds a person's rows (``person forget``).

Filled when a run is planned (:mod:`scheduler.ledger.queries.names`) and by the migration
for the rows planned before it; ``person forget`` deletes the person's ``recipient_names``
rows and the names (with their keys) no other number has. On SQLite the two key tables are
``WITHOUT ROWID``: their rows live in the primary key's tree. ``recipient_names`` has no
second index (by name id): at a million rows it cost ~3.5 s of a plan's CPU; the search
reads the numbers of a few name ids with one bounded read instead.
"""

from __future__ import annotations

from sqlalchemy import Index, String, Table
from sqlmodel import Field

from scheduler.ledger.table_parts import LedgerTable

#: The key's type: byte order on PostgreSQL (a prefix is one range), plain elsewhere.
KEY_TYPE = String().with_variant(String(collation="C"), "postgresql")


class PersonName(LedgerTable, table=True):
    """A name as a CSV had it, once however many numbers and runs had it."""

    __tablename__ = "person_names"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)


class PersonNameKey(LedgerTable, table=True):
    """One key (a folded word start) of a distinct name."""

    __tablename__ = "person_name_keys"
    __table_args__ = ({"sqlite_with_rowid": False},)

    name_key: str = Field(primary_key=True, sa_type=KEY_TYPE)
    name_id: int = Field(primary_key=True)


class RecipientName(LedgerTable, table=True):
    """A name a number had in a run's CSV."""

    __tablename__ = "recipient_names"
    __table_args__ = ({"sqlite_with_rowid": False},)

    number: str = Field(primary_key=True)
    name_id: int = Field(primary_key=True)


def _table(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel for table=True
    assert isinstance(table, Table)
    return table


person_names = _table(PersonName)
person_name_keys = _table(PersonNameKey)
recipient_names = _table(RecipientName)
#: A name's keys (``person forget`` deletes them with the name): a small table's index.
NAME_KEYS_OF = Index("ix_person_name_keys_name", person_name_keys.c.name_id)
