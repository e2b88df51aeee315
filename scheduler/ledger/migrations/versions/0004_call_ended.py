"""call ended

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 07:30:00

- ``deliveries.ended_at``: when an automated voice call ended (``call.ended``). A call is in
  progress from its acceptance until then, which the voice channel's limit on calls in
  progress counts. NULL for every other channel.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ended_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_column("ended_at")
