"""workers

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 10:50:00

Several ``campaign serve`` workers on one PostgreSQL ledger (issue 14):

- ``workers``: each worker's id, host, pid, start and heartbeat (``stopped_at`` once it
  stopped cleanly; ``wants``: how many senders its dispatchers are ready to send through,
  0 while it starts); a worker is live while its heartbeat is fresh, and counts in the
  fair share of senders once it wants some.
- ``sender_leases``: one row per sender (a session, or the SMS/voice account) saying which
  worker may send through it until ``expires_at``; ``epoch`` counts hand-overs and
  ``last_sent_at`` is the sender's latest claim, so the next holder keeps its pace. The
  trigger leader's lease is a row of its own (``@trigger``).
- ``deliveries.worker``: the worker that claimed the row (per-worker throughput, and the
  rows a taker settles).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "workers",
        sa.Column("id", AutoString(), nullable=False),
        sa.Column("host", AutoString(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("heartbeat_at", UTCDateTime(), nullable=False),
        sa.Column("stopped_at", UTCDateTime(), nullable=True),
        sa.Column("wants", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "sender_leases",
        sa.Column("sender", AutoString(), nullable=False),
        sa.Column("worker", AutoString(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("last_sent_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("sender"),
    )
    with op.batch_alter_table("sender_leases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sender_leases_worker"), ["worker"], unique=False)
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("worker", AutoString(), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_column("worker")
    with op.batch_alter_table("sender_leases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sender_leases_worker"))
    op.drop_table("sender_leases")
    op.drop_table("workers")
