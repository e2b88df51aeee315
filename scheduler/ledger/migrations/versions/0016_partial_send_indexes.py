"""partial send indexes

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29 04:00:00

Two indexes of ``deliveries`` made partial (issue 32, P1): a plan's rows have neither a
message id nor a sender, so each of the 1,000,000 rows of a plan's insert wrote an entry
of NULLs to both, read by nothing (~3.2 s of P1's CPU on SQLite):

- ``ix_deliveries_msgid`` on ``message_id_norm``, ``WHERE message_id_norm IS NOT NULL``:
  every reader matches a message id by ``=`` or ``IN`` (tracking's event matching, the
  early events held, the sent proofs of an ambiguous row, the run view's events), which
  implies the predicate on SQLite and PostgreSQL alike.
- ``ix_deliveries_sender_dispatched`` on ``(sender, dispatched_at)``, ``WHERE sender IS
  NOT NULL``: every reader names its senders (``sender = ?``, ``sender IN (…)`` or
  ``sender IS NOT NULL``); not ``dispatched_at IS NOT NULL``, which a sender's newest
  send (``MAX(dispatched_at) WHERE sender = ?``, ``queries/sender_health.py``) does not
  imply. A row gets a sender when it is claimed (or pinned to one for a later step).

``tests/ledger/test_partial_indexes.py`` proves each of those queries still uses its index
(``EXPLAIN QUERY PLAN`` / ``EXPLAIN``). A plain ``DROP INDEX`` / ``CREATE INDEX`` on both
databases (no batch mode: the ``deliveries`` triggers of 0010 stay); the downgrade puts
the full indexes back.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

#: (name, columns, predicate) of each index made partial.
_INDEXES = (
    ("ix_deliveries_msgid", ["message_id_norm"], "message_id_norm IS NOT NULL"),
    ("ix_deliveries_sender_dispatched", ["sender", "dispatched_at"], "sender IS NOT NULL"),
)


def upgrade() -> None:
    """Apply this revision."""
    for name, columns, where in _INDEXES:
        op.drop_index(name, table_name="deliveries")
        op.create_index(name, "deliveries", columns, sqlite_where=sa.text(where),
                        postgresql_where=sa.text(where))


def downgrade() -> None:
    """Revert this revision."""
    for name, columns, _where in _INDEXES:
        op.drop_index(name, table_name="deliveries")
        op.create_index(name, "deliveries", columns)
