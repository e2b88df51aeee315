"""labels (placeholder, filled in by the labels work of issue 12)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 10:50:00
"""

from __future__ import annotations

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision (nothing yet)."""


def downgrade() -> None:
    """Revert this revision (nothing yet)."""
