"""Migration 0021 and its model agree: the ``privacy_audit`` table (who exported or erased a
person's data, when, why), on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import inspect

from scheduler.ledger import privacy_models
from scheduler.ledger.runs import Ledger


def test_the_migration_makes_what_the_model_says(ledger: Ledger) -> None:
    seen = inspect(ledger.engine)
    columns = {c["name"]: c["nullable"] for c in seen.get_columns("privacy_audit")}
    model = {c.name: c.nullable for c in privacy_models.privacy_audit.columns}
    assert columns == model
    assert model == {"id": False, "action": False, "subject": False, "who": False,
                     "via": False, "reason": True, "at": False, "counts": False}
    assert seen.get_pk_constraint("privacy_audit")["constrained_columns"] == ["id"]
