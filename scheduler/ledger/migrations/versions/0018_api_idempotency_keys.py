"""api idempotency keys

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29 06:00:00

The HTTP API's ``Idempotency-Key``s (issue 34, :mod:`scheduler.ledger.idempotency`):

- ``api_idempotency_keys``: one row per key sent with ``POST /api/v1/runs``: the SHA-256
  of the request it came with, the run it started (empty while that run is being planned),
  and when it was first sent.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "api_idempotency_keys",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("request_hash", sa.String(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("api_idempotency_keys")
