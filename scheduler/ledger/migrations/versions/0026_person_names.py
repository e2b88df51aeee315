"""person names

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 09:50:00

The search by name (issue 35) in three narrow tables instead of one row per number and
word start (:mod:`scheduler.ledger.name_models`): ``person_names`` (each distinct name
once), ``person_name_keys`` (the keys of the distinct names: thousands of rows, the key in
the ``"C"`` collation on PostgreSQL) and ``recipient_names`` (``number, name_id``, a valid
number's names). A million-row plan writes ~1,000,000 narrow rows in one tree instead of
~2,000,000 rows in two (issue 32's P1: the INSERT took ~11 s of CPU). The 0023 table is
dropped; the new ones are filled from the rows planned before this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString

from scheduler.ledger.queries import names

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.drop_index("ix_recipient_names_key", table_name="recipient_names")
    op.drop_table("recipient_names")
    op.create_table(
        "person_names",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "person_name_keys",
        sa.Column("name_key", AutoString().with_variant(sa.String(collation="C"),
                                                        "postgresql"), nullable=False),
        sa.Column("name_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name_key", "name_id"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_person_name_keys_name", "person_name_keys", ["name_id"])
    op.create_table(
        "recipient_names",
        sa.Column("number", AutoString(), nullable=False),
        sa.Column("name_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("number", "name_id"),
        sqlite_with_rowid=False,
    )
    names.fill_from_deliveries(op.get_bind())


def downgrade() -> None:
    """Revert this revision (the 0023 table comes back empty)."""
    op.drop_table("recipient_names")
    op.drop_index("ix_person_name_keys_name", table_name="person_name_keys")
    op.drop_table("person_name_keys")
    op.drop_table("person_names")
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
