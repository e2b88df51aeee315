"""state mark index

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 09:00:00

``ix_deliveries_marks`` on ``deliveries (run_id, state, id) WHERE state IN ('unknown',
'skipped')``, PostgreSQL only (issue 34, H1): the marks a run's view checks before it
gives a kept judgement again (:mod:`scheduler.ledger.queries.verdict_marks`: the count and
two sums of the ids of a run's ``unknown`` and of its ``skipped`` rows) become an
index-only scan of the few entries of those states. Through ``ix_deliveries_claim`` (no
id in it) PostgreSQL visited a heap page per row: 10,000 and 20,000 pages, 12 and 24 ms
warm, 30 and 120 ms cold, on the 1,000,000-row D1 run. SQLite's claim index already holds
the id (the rowid of every entry), so it gets no such index. Only rows in those two
states have an entry: a plan's and a send's writes of other states never touch it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

#: The predicate (``scheduler.ledger.models.MARKED`` spells it the same).
_WHERE = "state IN ('unknown', 'skipped')"


def upgrade() -> None:
    """Apply this revision."""
    if op.get_bind().dialect.name == "postgresql":
        op.create_index("ix_deliveries_marks", "deliveries", ["run_id", "state", "id"],
                        postgresql_where=sa.text(_WHERE))


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_deliveries_marks", table_name="deliveries")
