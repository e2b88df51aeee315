"""recipient names

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29 08:50:00

The search by name of the recipient page (issue 35, item 4;
:mod:`scheduler.ledger.name_models`): ``recipient_names`` holds each number's name by
the folded start of each of its words, found by ``ix_recipient_names_key`` (a prefix is
one range; on PostgreSQL the key is compared in the ``"C"`` collation; on SQLite the
table is ``WITHOUT ROWID``: its rows live in the primary key's tree). Revision 0026 drops
it for three narrower tables and fills those from the rows planned before it, so this one
is created empty (its fill wrote the old table, whose code is gone).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "recipient_names",
        sa.Column("number", AutoString(), nullable=False),
        sa.Column("name_key", AutoString().with_variant(sa.String(collation="C"),
                                                        "postgresql"), nullable=False),
        sa.Column("name", AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("number", "name_key"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_recipient_names_key", "recipient_names", ["name_key"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_recipient_names_key", table_name="recipient_names")
    op.drop_table("recipient_names")
