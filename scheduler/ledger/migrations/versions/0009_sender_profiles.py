"""sender profiles

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28 09:00:00

Each sender's health and warm-up, kept across runs, campaigns and workers (issue 22):

- ``sender_profiles``: one row per sender (a WhatsApp session id, or ``account`` for SMS
  and voice): when the project first sent or planned through it, its latest send, its
  state (``warming``, ``healthy``, ``throttled``, ``paused``, ``disconnected``,
  ``logged_out``, ``retired``) with the reason and since when, its warm-up profile and
  day (``warm_day_date``: the local date the day was last advanced for), its latest
  health score and the throttle factor applied to its rate (1.0: full speed).
- ``sender_state_changes``: every change of state (or of its reason), append-only: when,
  from and to which state, why, who (``engine``, ``operator``, ``event``), the score.
- ``ix_deliveries_sender_dispatched`` on ``deliveries (sender, dispatched_at)``: a warm-up
  cap counts every send through a sender since the start of its day, over all runs,
  inside the claim transaction. No index had ``sender`` first (``ix_deliveries_claim`` is
  ``run_id, state, seq``), so that count, and the day's count a worker reads when it
  takes a sender over, scanned the whole table; with this index they read the sender's
  rows of the day only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "sender_profiles",
        sa.Column("sender", AutoString(), nullable=False),
        sa.Column("first_seen_at", UTCDateTime(), nullable=False),
        sa.Column("last_sent_at", UTCDateTime(), nullable=True),
        sa.Column("state", AutoString(), nullable=False, server_default="warming"),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("since", UTCDateTime(), nullable=False),
        sa.Column("warm_profile", AutoString(), nullable=True),
        sa.Column("warm_day", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("warm_day_date", sa.Date(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("throttle", sa.Float(), nullable=False, server_default="1.0"),
        sa.PrimaryKeyConstraint("sender"),
    )
    op.create_table(
        "sender_state_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sender", AutoString(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("from_state", AutoString(), nullable=True),
        sa.Column("to_state", AutoString(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("source", AutoString(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_sender_state_changes_sender", "sender_state_changes",
                    ["sender", "id"], unique=False)
    # a plain CREATE INDEX on both databases (no batch copy of the deliveries table)
    op.create_index("ix_deliveries_sender_dispatched", "deliveries",
                    ["sender", "dispatched_at"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_deliveries_sender_dispatched", table_name="deliveries")
    op.drop_index("ix_sender_state_changes_sender", table_name="sender_state_changes")
    op.drop_table("sender_state_changes")
    op.drop_table("sender_profiles")
