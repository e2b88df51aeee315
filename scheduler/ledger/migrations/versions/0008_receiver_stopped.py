"""receiver stopped

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 08:00:00

- ``receiver_uptime.stopped_at``: when a receiver stopped listening of its own accord (a
  run that ended, Ctrl-C). NULL while it listens, and for one that was killed: its last
  heartbeat (``last_seen_at``) is then the last moment it is known to have listened. An
  ``unknown`` send is called "not taken" only when the intervals cover its whole retry
  horizon (issue 20); a receiver known to have stopped is never taken to listen still.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("receiver_uptime", schema=None) as batch_op:
        batch_op.add_column(sa.Column("stopped_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("receiver_uptime", schema=None) as batch_op:
        batch_op.drop_column("stopped_at")
