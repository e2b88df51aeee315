"""run tallies

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 14:00:00

Per-run counters kept by triggers on ``deliveries`` (issue 23: a status or a dashboard
page of a 1,000,000-row run must not scan the run):

- ``run_tallies``: rows per (run, step, state, ``marks``, worker, shard); ``marks`` is a
  bitmask of the time columns that are set (accepted 1, sent 2, delivered 4, read 8,
  replied 16, ended 32), ``worker`` is ``''`` for none, ``shard`` is 0 on SQLite and the
  writing backend's pid on PostgreSQL (concurrent transactions never share a counter row).
- ``run_minutes``: sends per (run, UTC minute of ``COALESCE(dispatched_at, accepted_at,
  sent_at)``, shard): the report's sends per hour.
- the triggers (and PostgreSQL's trigger functions) of
  :mod:`scheduler.ledger.queries.tallies`, after a backfill of the rows already stored
  (one ``GROUP BY`` per table; on PostgreSQL under a lock that holds writers of
  ``deliveries`` back until the triggers exist, so no change falls between the two).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

from scheduler.ledger.queries import tallies

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("LOCK TABLE deliveries IN SHARE ROW EXCLUSIVE MODE")
    run = sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE")
    op.create_table(
        "run_tallies",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("state", AutoString(), nullable=False),
        sa.Column("marks", sa.Integer(), nullable=False),
        sa.Column("worker", AutoString(), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*tallies.TALLY_KEY, "shard"),
        run,
        sqlite_with_rowid=False,  # one B-tree: a trigger's upsert is one lookup, not two
    )
    op.create_table(
        "run_minutes",
        sa.Column("run_id", sa.Integer(), nullable=False),
        # SQLite keeps times as text: its minute is the text 'YYYY-MM-DD HH:MM'
        sa.Column("minute", UTCDateTime().with_variant(sa.Text(), "sqlite"), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*tallies.MINUTE_KEY, "shard"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sqlite_with_rowid=False,
    )
    for statement in tallies.backfill_statements(dialect):
        op.execute(statement)
    for statement in tallies.create_statements(dialect):
        op.execute(statement)


def downgrade() -> None:
    """Revert this revision."""
    for statement in tallies.drop_statements(op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("run_minutes")
    op.drop_table("run_tallies")
