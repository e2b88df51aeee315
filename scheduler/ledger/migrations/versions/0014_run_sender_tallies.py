"""run sender tallies

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29 02:30:00

Per-(run, sender) counters kept by triggers on ``deliveries`` (issue 32: ``campaign
status --json`` on a 1,000,000-row run must not scan the run's rows per sender):

- ``run_sender_tallies``: rows per (run, sender, ``grp``, ``replied``, shard) of the rows
  that went through a sender and are past the plan; ``grp`` is ``sent``, ``failed``,
  ``unknown`` or ``other``, ``replied`` 1 when ``replied_at`` is set, ``shard`` 0 on
  SQLite and the writing backend's pid on PostgreSQL (as ``run_tallies``, 0010).
- the triggers (and PostgreSQL's trigger functions) of
  :mod:`scheduler.ledger.queries.sender_tallies`, after a backfill of the rows already
  stored (one ``GROUP BY``; on PostgreSQL under a lock that holds writers of
  ``deliveries`` back until the triggers exist, so no change falls between the two).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString

from scheduler.ledger.queries import sender_tallies

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("LOCK TABLE deliveries IN SHARE ROW EXCLUSIVE MODE")
    op.create_table(
        "run_sender_tallies",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("sender", AutoString(), nullable=False),
        sa.Column("grp", AutoString(), nullable=False),
        sa.Column("replied", sa.Integer(), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*sender_tallies.KEY, "shard"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sqlite_with_rowid=False,  # one B-tree: a trigger's upsert is one lookup, not two
    )
    for statement in sender_tallies.backfill_statements(dialect):
        op.execute(statement)
    for statement in sender_tallies.create_statements(dialect):
        op.execute(statement)


def downgrade() -> None:
    """Revert this revision."""
    for statement in sender_tallies.drop_statements(op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("run_sender_tallies")
