"""Migration 0022 and its model agree: the ``consents`` table, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import inspect

from scheduler.ledger.consent import consents
from scheduler.ledger.runs import Ledger


def test_the_migration_makes_what_the_model_says(ledger: Ledger) -> None:
    seen = inspect(ledger.engine)
    columns = {c["name"]: c["nullable"] for c in seen.get_columns("consents")}
    assert columns == {c.name: c.nullable for c in consents.columns}
    assert columns == {"id": False, "number": False, "channel": False, "given_at": False,
                       "text": True, "version": True, "source_file": False,
                       "source_row": False, "imported_at": False}
    indexes = {i["name"]: i["column_names"] for i in seen.get_indexes("consents")}
    assert indexes == {"ix_consents_number_channel": ["number", "channel"]}
