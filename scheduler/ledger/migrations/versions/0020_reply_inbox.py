"""reply inbox

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29 06:00:00

The inbox and one recipient's story (issue 35, items 3 and 4;
:mod:`scheduler.ledger.inbox_models`):

- ``reply_handled``: one row per reply a person marked as handled (who, when);
- ``ix_replies_received_at``: the inbox's newest-first list of replies across runs;
- ``ix_replies_run_received``: one run's replies, newest first (no sort of the run's);
- ``ix_link_clicks_delivery``: a recipient's clicks by the ids of their deliveries.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "reply_handled",
        sa.Column("reply_id", sa.Integer(), nullable=False),
        sa.Column("handled_by", AutoString(), nullable=False),
        sa.Column("handled_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("reply_id"),
    )
    op.create_index("ix_replies_received_at", "replies", ["received_at"])
    op.create_index("ix_replies_run_received", "replies", ["run_id", "received_at"])
    op.create_index("ix_link_clicks_delivery", "link_clicks", ["delivery_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_link_clicks_delivery", table_name="link_clicks")
    op.drop_index("ix_replies_run_received", table_name="replies")
    op.drop_index("ix_replies_received_at", table_name="replies")
    op.drop_table("reply_handled")
