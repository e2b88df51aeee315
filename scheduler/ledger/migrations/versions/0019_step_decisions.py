"""step decisions

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29 07:00:00

Steps that follow the recipient's replies (issue 35, :mod:`scheduler.ledger.queries.
conversation`):

- ``deliveries.gate``: 1 while a row waits for its step's condition to be decided, with
  the partial index ``ix_deliveries_gate`` (run_id, id) holding exactly those rows;
- ``step_decisions``: one decision per delivery (unique ``delivery_id``): go or skip, why,
  when, the reply that decided it, and a reply that came after it (noted, never undoing);
- ``replies.to_answer`` (a person should read it: no condition took it, not an opt-out)
  and ``replies.choices`` (JSON: a button's or list row's id and title, poll options).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

#: ix_deliveries_gate's predicate (models.GATED, word for word).
GATED = "gate IS NOT NULL AND state = 'planned'"


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("deliveries", sa.Column("gate", sa.Integer(), nullable=True))
    op.create_index("ix_deliveries_gate", "deliveries", ["run_id", "id"],
                    sqlite_where=sa.text(GATED), postgresql_where=sa.text(GATED))
    op.add_column("replies", sa.Column("to_answer", sa.Boolean(), nullable=False,
                                       server_default="0"))
    op.add_column("replies", sa.Column("choices", sa.Text(), nullable=True))
    op.create_table(
        "step_decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("to", AutoString(), nullable=False),
        sa.Column("looked_id", sa.Integer(), nullable=True),
        sa.Column("outcome", AutoString(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("decided_at", UTCDateTime(), nullable=False),
        sa.Column("reply_id", sa.Integer(), nullable=True),
        sa.Column("late_at", UTCDateTime(), nullable=True),
        sa.Column("late_note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("delivery_id"),
    )
    op.create_index("ix_step_decisions_run", "step_decisions", ["run_id", "step"])
    op.create_index("ix_step_decisions_looked_id", "step_decisions", ["looked_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_step_decisions_looked_id", table_name="step_decisions")
    op.drop_index("ix_step_decisions_run", table_name="step_decisions")
    op.drop_table("step_decisions")
    op.drop_column("replies", "choices")
    op.drop_column("replies", "to_answer")
    op.drop_index("ix_deliveries_gate", table_name="deliveries")
    op.drop_column("deliveries", "gate")
