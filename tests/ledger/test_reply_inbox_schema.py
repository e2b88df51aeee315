"""Migration 0020 and its model agree: the ``reply_handled`` table (who handled a reply,
when) and the indexes the inbox and a recipient's story read by, on SQLite and
PostgreSQL."""

from __future__ import annotations

from sqlalchemy import inspect

from scheduler.ledger import inbox_models
from scheduler.ledger.runs import Ledger


def test_the_migration_makes_what_the_model_says(ledger: Ledger) -> None:
    seen = inspect(ledger.engine)
    columns = {c["name"]: c["nullable"] for c in seen.get_columns("reply_handled")}
    model = {c.name: c.nullable for c in inbox_models.reply_handled.columns}
    assert columns == model == {"reply_id": False, "handled_by": False, "handled_at": False}
    assert seen.get_pk_constraint("reply_handled")["constrained_columns"] == ["reply_id"]
    for index in (inbox_models.REPLIES_RECEIVED, inbox_models.REPLIES_RUN_RECEIVED,
                  inbox_models.CLICKS_DELIVERY):
        table = index.table
        assert table is not None
        found = {ix["name"]: ix["column_names"] for ix in seen.get_indexes(table.name)}
        assert found.get(str(index.name)) == [c.name for c in index.columns], index.name
