"""experiments

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 16:00:00

A/B variants and their test (issue 24, :mod:`scheduler.experiments`):

- ``deliveries.variant``: the variant the row sends (NULL for a campaign without variants,
  and for a row ``held`` until its experiment decides).
- ``deliveries.choices``: a ``held`` row's rendered payload of every variant (JSON object,
  variant → payload), so the decision is one UPDATE: the winner's payload becomes the
  row's and the row ``planned``. NULL once decided, and for every other row.
- ``experiments``: one row per run with an ``[experiment]``: its variants and settings
  (JSON), the test share's and the rest's sizes, when the test share's last send went out
  and when the test is due, when it was decided, the winner (NULL: no clear winner), the
  variant sent to the rest (``goes``) and the decision with its numbers (JSON of
  :class:`scheduler.experiments.Decision`). ``decided_at`` is set once, by a conditional
  UPDATE in the decision's transaction: one worker decides, even after a crash.

Adding the columns is a plain ``ALTER TABLE ADD COLUMN`` on both databases, so the
``deliveries`` triggers of 0010 stay; the downgrade rebuilds the table on SQLite (batch
mode) and so creates them again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

from scheduler.ledger.queries import tallies

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("deliveries", sa.Column("variant", AutoString(), nullable=True))
    op.add_column("deliveries", sa.Column("choices", sa.Text(), nullable=True))
    op.create_table(
        "experiments",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("variants", sa.Text(), nullable=False),
        sa.Column("control", AutoString(), nullable=False),
        sa.Column("settings", sa.Text(), nullable=False),
        sa.Column("test_size", sa.Integer(), nullable=False),
        sa.Column("rest_size", sa.Integer(), nullable=False),
        sa.Column("test_sent_at", UTCDateTime(), nullable=True),
        sa.Column("decide_at", UTCDateTime(), nullable=True),
        sa.Column("decided_at", UTCDateTime(), nullable=True),
        sa.Column("winner", AutoString(), nullable=True),
        sa.Column("goes", AutoString(), nullable=True),
        sa.Column("decision", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("run_id"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("experiments")
    dialect = op.get_bind().dialect.name
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_column("choices")
        batch_op.drop_column("variant")
    if dialect == "sqlite":  # the batch copy dropped the triggers of 0010
        for statement in tallies.create_statements(dialect):
            op.execute(statement)
