"""drop sender_profiles.last_sent_at

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 16:10:00

``sender_profiles.last_sent_at`` out: nothing has written it since the workers' leases took
the claims over, and ``campaign senders`` read it as "never sent" (fixed in e5ae68f: a
sender's latest send is its newest dispatched row, ``queries.sender_health.last_sends``,
as the dispatcher's warm-up reads it). The table is small (a row per sender); SQLite
rebuilds it (batch mode), PostgreSQL drops the column in place.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("sender_profiles") as batch_op:
        batch_op.drop_column("last_sent_at")


def downgrade() -> None:
    """Revert this revision (the column comes back empty, as nothing wrote it)."""
    with op.batch_alter_table("sender_profiles") as batch_op:
        batch_op.add_column(sa.Column("last_sent_at", UTCDateTime(), nullable=True))
