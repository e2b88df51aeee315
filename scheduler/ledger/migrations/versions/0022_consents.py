"""consent records

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-29 06:40:00

The consent list (issue 36, item 1; :mod:`scheduler.ledger.consent`): ``consents`` keeps
each imported record (number, channel, when, the text or version agreed to, and its source
file and row).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "consents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("number", AutoString(), nullable=False),
        sa.Column("channel", AutoString(), nullable=False),
        sa.Column("given_at", UTCDateTime(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("version", AutoString(), nullable=True),
        sa.Column("source_file", AutoString(), nullable=False),
        sa.Column("source_row", sa.Integer(), nullable=False),
        sa.Column("imported_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_consents_number_channel", "consents", ["number", "channel"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_consents_number_channel", table_name="consents")
    op.drop_table("consents")
