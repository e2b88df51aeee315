"""webhook outbox

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29 05:50:00

The outgoing webhooks' outbox (issue 34, item 3; :mod:`scheduler.ledger.queries.outbox`):

- ``outbox_events``: one row per event (run, sender, recipient, A/B test), written in the
  transaction of the change it reports: its stable ``msg_id``, type, payload (JSON), run,
  time, an optional unique ``dedupe_key``, and when it was given out to the subscriptions
  (a partial index finds those not given out yet).
- ``outbox_deliveries``: one row per event and subscription: state (pending, delivered,
  failed), tries, the next try's time (a partial index on the pending ones), the last
  HTTP status and error, when it was delivered. No secret is stored.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "outbox_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("msg_id", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("dedupe_key", sa.String(), nullable=True),
        sa.Column("fanned_out_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("msg_id", name="uq_outbox_events_msg_id"),
        sa.UniqueConstraint("dedupe_key", name="uq_outbox_events_dedupe_key"),
    )
    op.create_index("ix_outbox_events_unfanned", "outbox_events", ["id"],
                    sqlite_where=sa.text("fanned_out_at IS NULL"),
                    postgresql_where=sa.text("fanned_out_at IS NULL"))
    op.create_table(
        "outbox_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("subscription", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=False),
        sa.Column("last_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["event_id"], ["outbox_events.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("event_id", "subscription", name="uq_outbox_deliveries_event_sub"),
    )
    op.create_index("ix_outbox_deliveries_due", "outbox_deliveries", ["next_attempt_at"],
                    sqlite_where=sa.text("state = 'pending'"),
                    postgresql_where=sa.text("state = 'pending'"))


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_outbox_deliveries_due", table_name="outbox_deliveries")
    op.drop_table("outbox_deliveries")
    op.drop_index("ix_outbox_events_unfanned", table_name="outbox_events")
    op.drop_table("outbox_events")
