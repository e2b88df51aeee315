"""api tokens

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29 03:00:00

The HTTP API's bearer tokens (issue 34, :mod:`scheduler.ledger.api_tokens`):

- ``api_tokens``: one row per token, by its unique ``name``: its ``role`` (``viewer`` or
  ``operator``), the SHA-256 of the token (hex, unique: a request's token is found by its
  hash; the token itself is never stored), when it was made, last used and revoked (a
  revoked token is kept, for ``campaign api-token list``, and never accepted again).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", name="uq_api_tokens_name"),
        sa.UniqueConstraint("token_hash", name="uq_api_tokens_hash"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("api_tokens")
