"""outbox run index

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 09:10:00

``ix_outbox_events_run_type`` on ``outbox_events (run_id, type)`` (issue 36): ``person
export`` and ``person forget`` find the outgoing webhook events about a person (the
``recipient.*`` events of the runs that reached them, :mod:`scheduler.ledger.person_rows`)
by this index instead of reading the whole outbox.
"""

from __future__ import annotations

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_index("ix_outbox_events_run_type", "outbox_events", ["run_id", "type"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_outbox_events_run_type", table_name="outbox_events")
