"""attempts

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 17:00:00

Second chances (issue 25: retry rules per outcome, a fallback to another channel). Every
attempt is a ledger row linked to the recipient's first one:

- ``deliveries.attempt``: 1 for a first attempt (every row stored before this revision),
  2, 3, … for the attempts a rule made.
- ``deliveries.first_id``: the first attempt's id (NULL on a first attempt); a fallback
  row in the child run points at the parent's first attempt.
- ``deliveries.rule``: what made the attempt (``no_answer``, ``busy``, ``failed``,
  ``undelivered``, ``not_answered``, ``fallback``); NULL on a first attempt.
- ``deliveries.watch``: 1 while a verdict on the row's outcome is to be taken.
- ``deliveries.verdict``: the verdict taken, in plain words.
- ``deliveries.fallback``: JSON: what the recipient gets if they fall back
  (``{"kind", "path", "payload"}``, or ``{"none": why}``); NULL without a fallback.
- ``runs.parent_run_id``: a fallback run's parent; ``ux_runs_parent`` keeps it to one
  child per parent (two workers making it at once: the second gets the first's).
- ``ux_deliveries_attempt`` on (first_id, attempt), unique: never two rows for attempt n
  of one recipient and step, whatever the crashes or the workers. Partial (``first_id IS
  NOT NULL``): first attempts could never collide anyway (NULLs are distinct), and the
  plan's bulk insert of 1,000,000 first attempts then writes no entry to it.
- ``ix_deliveries_watch`` on (run_id, id), partial: exactly the rows awaiting a verdict
  (``watch IS NOT NULL`` and sent or settled, i.e. not planned, dispatching or held).
  A voice run with retry rules plans every row watched; an index over ``watch IS NOT
  NULL`` alone would hold its 1,000,000 planned rows, and each look for rows to judge
  would walk past them. This one holds only what the look returns, in id order, and the
  plan's insert (planned rows) writes nothing to it. The query must spell the predicate
  with the same literals (see ``queries/recycling.py``).

Adding the columns is a plain ``ALTER TABLE ADD COLUMN`` on both databases, so the
``deliveries`` triggers of 0010 stay (no batch mode: its copy of the table would drop
them); the downgrade drops the indexes and then the columns, again in place (SQLite 3.35+
drops an unindexed column without a copy).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

#: The rows awaiting a verdict (the same text in models.py and queries/recycling.py).
WATCHED = "watch IS NOT NULL AND state NOT IN ('planned', 'dispatching', 'held')"
_COLUMNS = ("attempt", "first_id", "rule", "watch", "verdict", "fallback")


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("deliveries", sa.Column("attempt", sa.Integer(), nullable=False,
                                          server_default="1"))
    op.add_column("deliveries", sa.Column("first_id", sa.Integer(), nullable=True))
    op.add_column("deliveries", sa.Column("rule", AutoString(), nullable=True))
    op.add_column("deliveries", sa.Column("watch", sa.Integer(), nullable=True))
    op.add_column("deliveries", sa.Column("verdict", sa.Text(), nullable=True))
    op.add_column("deliveries", sa.Column("fallback", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("parent_run_id", sa.Integer(), nullable=True))
    op.create_index("ux_deliveries_attempt", "deliveries", ["first_id", "attempt"],
                    unique=True, sqlite_where=sa.text("first_id IS NOT NULL"),
                    postgresql_where=sa.text("first_id IS NOT NULL"))
    op.create_index("ix_deliveries_watch", "deliveries", ["run_id", "id"],
                    sqlite_where=sa.text(WATCHED), postgresql_where=sa.text(WATCHED))
    op.create_index("ix_deliveries_attempts", "deliveries", ["run_id"],
                    sqlite_where=sa.text("first_id IS NOT NULL"),
                    postgresql_where=sa.text("first_id IS NOT NULL"))
    op.create_index("ux_runs_parent", "runs", ["parent_run_id"], unique=True,
                    sqlite_where=sa.text("parent_run_id IS NOT NULL"),
                    postgresql_where=sa.text("parent_run_id IS NOT NULL"))


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ux_runs_parent", table_name="runs")
    op.drop_index("ix_deliveries_attempts", table_name="deliveries")
    op.drop_index("ix_deliveries_watch", table_name="deliveries")
    op.drop_index("ux_deliveries_attempt", table_name="deliveries")
    op.drop_column("runs", "parent_run_id")
    for column in reversed(_COLUMNS):
        op.drop_column("deliveries", column)
