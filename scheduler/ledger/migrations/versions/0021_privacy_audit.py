"""privacy audit

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29 06:30:00

A person's data exported or erased (issue 36, item 2;
:mod:`scheduler.ledger.privacy_models`): ``privacy_audit`` keeps each use (who, when, why,
what, and the person's pseudonym, never the number).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "privacy_audit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("action", AutoString(), nullable=False),
        sa.Column("subject", AutoString(), nullable=False),
        sa.Column("who", AutoString(), nullable=False),
        sa.Column("via", AutoString(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("counts", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("privacy_audit")
