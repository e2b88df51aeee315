"""The ledger's partial indexes as the models declare them (:class:`PartialIndex`, whose
options are made when a database asks; issue 32) are the ones the migrations made, on
SQLite and PostgreSQL: every partial index of every table, its columns and its predicate
(absent where the index is whole or missing, as ``ix_deliveries_marks`` on SQLite). And a
table's model still validates what it is given, its validator built on first use."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sqlalchemy import Connection, inspect, text
from sqlmodel import SQLModel

from scheduler.ledger.models import Delivery, Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.table_parts import PartialIndex


def _predicates(conn: Connection, tables: set[str]) -> dict[str, tuple[list[str], str | None]]:
    """Each index of ``tables``: its columns and its predicate, as the database says them
    (SQLite keeps the text given: its spaces, parentheses and case are set aside)."""
    found = {}
    for table in tables:
        for ix in inspect(conn).get_indexes(table):
            where = ix.get("dialect_options", {}).get(f"{conn.dialect.name}_where")
            said = None if where is None else " ".join(
                str(where).replace("(", " ").replace(")", " ").lower().split())
            found[str(ix["name"])] = ([str(c) for c in ix["column_names"]], said)
    return found


def test_every_partial_index_of_the_models_is_the_migrated_one(ledger: Ledger,
                                                                 db_backend: str) -> None:
    """Each declared predicate is given to the database as a twin index (in a transaction
    rolled back), so that the database spells both alike (PostgreSQL rewrites ``IN``)."""
    partial = [(table.name, index) for table in SQLModel.metadata.tables.values()
               for index in table.indexes if isinstance(index, PartialIndex)]
    assert len(partial) >= 8  # runs' parent, the deliveries' seven
    with ledger.engine.connect() as conn, conn.begin() as tx:
        for table, index in partial:
            where = index.dialect_options[db_backend].get("where")
            columns = ", ".join(f'"{c.name}"' for c in index.columns)
            conn.execute(text(f'CREATE INDEX "twin_{index.name}" ON {table} ({columns})'
                              + (f" WHERE {where}" if where is not None else "")))
        found = _predicates(conn, {table for table, _ in partial})
        tx.rollback()
    for _, index in partial:
        name = str(index.name)
        if db_backend not in index.where_dialects:  # ix_deliveries_marks: PostgreSQL only
            assert name not in found
            continue
        assert found[name][1] is not None, name
        assert found[name] == found[f"twin_{name}"], name


def test_a_partial_index_lists_its_predicate_for_each_database() -> None:
    """As a plain ``Index(..., sqlite_where=..., postgresql_where=...)`` would: Alembic
    renders and copies an index from these."""
    index = next(ix for ix in Run.__table__.indexes  # type: ignore[attr-defined]
                 if ix.name == "ux_runs_parent")
    assert {key: str(value) for key, value in index.dialect_kwargs.items()} == {
        "sqlite_where": "parent_run_id IS NOT NULL",
        "postgresql_where": "parent_run_id IS NOT NULL"}
    assert index.unique


def test_a_table_model_validates_what_it_is_given() -> None:
    run = Run.model_validate({"campaign_id": 1, "campaign_name": "c", "channel": "sms",
                              "status": "planned", "created_at": "2026-01-01T00:00:00Z"})
    assert run.created_at.isoformat() == "2026-01-01T00:00:00+00:00"
    with pytest.raises(ValidationError, match="created_at"):
        Run.model_validate({"campaign_id": 1, "campaign_name": "c", "channel": "sms",
                            "status": "planned", "created_at": "not a time"})


def test_runs_have_a_mapper_registry_of_their_own_and_the_ledgers_metadata() -> None:
    """Reading runs configures Run's mapper alone (RunTable); its table is the ledger's as
    every other (Alembic and the person's export read the tables from that metadata)."""
    assert Run.__table__ is SQLModel.metadata.tables["runs"]  # type: ignore[attr-defined]
    assert Run._sa_registry is not Delivery._sa_registry
    assert Run._sa_registry.metadata is SQLModel.metadata
