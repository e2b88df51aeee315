"""workers (placeholder, filled in by the scale-out work of issue 14)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 10:50:00
"""

from __future__ import annotations

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision (nothing yet)."""


def downgrade() -> None:
    """Revert this revision (nothing yet)."""
