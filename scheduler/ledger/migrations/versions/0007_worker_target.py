"""worker target

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 10:00:00

- ``workers.target``: where the worker sends, as ``runs.target`` records it (``sandbox`` or
  ``service:<host[:port]>``). A worker leaves alone a run started against another target,
  so ``status``, ``runs`` and ``workers`` can tell a running run that no live worker will
  serve (issue 20). Null for a worker registered before this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("target", AutoString(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.drop_column("target")
