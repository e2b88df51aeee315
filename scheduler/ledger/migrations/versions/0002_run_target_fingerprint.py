"""run target and fingerprint; receiver uptime

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 04:20:00

- ``runs.target``: where the run's sends went: ``sandbox`` or ``service:<host>``.
- ``runs.fingerprint``: JSON of what the run was planned from (definition sections, the
  hashes of the CSV, opt-out lists and templates), to notice edits before continuing.
- ``receiver_uptime``: intervals during which a webhook receiver of this ledger was
  listening, so that a send with no proof after the service's retry horizon can be called
  "not accepted" only when its events had somewhere to go.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("target", sqlmodel.sql.sqltypes.AutoString(),
                                      nullable=True))
        batch_op.add_column(sa.Column("fingerprint", sa.Text(), nullable=True))
    op.create_table(
        "receiver_uptime",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("url_key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("receiver_uptime")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("fingerprint")
        batch_op.drop_column("target")
