"""run options

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 09:00:00

- ``runs.options``: JSON of the run's options (``scheduler.settings.run.RunOptions``, with
  its ``version``), parsed once when the run is planned. Runs stored before this revision
  keep NULL: their options are rebuilt from their definition snapshot when read
  (``scheduler.settings.run.from_snapshot``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("options", sa.Text(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("options")
