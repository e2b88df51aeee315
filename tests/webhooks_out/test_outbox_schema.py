"""Migration 0017 and the outbox's tables in ``ledger/queries/outbox.py`` agree: the same
columns (names, nullability), indexes and unique constraints; the migration goes back and
forth."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect

from scheduler.ledger.db import alembic_config, open_ledger
from scheduler.ledger.queries import outbox as oq


def test_the_migrated_tables_equal_the_queries_tables(ledger_url: str) -> None:
    engine = open_ledger(ledger_url)
    try:
        seen = inspect(engine)
        for table in (oq.outbox_events, oq.outbox_deliveries):
            migrated = {c["name"]: c["nullable"] for c in seen.get_columns(table.name)}
            assert migrated == {c.name: c.nullable for c in table.columns}, table.name
            indexes = {i["name"] for i in seen.get_indexes(table.name)}
            assert {i.name for i in table.indexes} <= indexes, table.name
            uniques = {u["name"] for u in seen.get_unique_constraints(table.name)}
            assert {c.name for c in table.constraints
                    if c.__class__.__name__ == "UniqueConstraint"} <= uniques, table.name
        config = alembic_config(engine)
        command.downgrade(config, "0016")
        assert not {"outbox_events", "outbox_deliveries"} & set(
            inspect(engine).get_table_names())
        command.upgrade(config, "head")
        assert {"outbox_events", "outbox_deliveries"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
