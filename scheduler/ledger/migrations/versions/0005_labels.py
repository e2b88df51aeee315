"""labels

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 10:50:00

The current label state of each session, kept by the receiver from the six label events
(``labels.*`` in real time, ``appstate.label.*`` from a full sync):

- ``labels``: a session's labels (name, color, deleted);
- ``label_chats``: a label on a chat, or removed from it (``number``: the chat's phone
  digits when its JID is a phone number's, NULL for ``@lid`` and group chats);
- ``label_messages``: a label on one message of a chat.

Each row keeps the ``rank`` of the fact it holds (event time, full sync over real time, a
fixed tie-break), so a later fact replaces it and an older or repeated one changes nothing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "labels",
        sa.Column("session_id", AutoString(), nullable=False),
        sa.Column("label_id", AutoString(), nullable=False),
        sa.Column("name", AutoString(), nullable=True),
        sa.Column("name_rank", AutoString(), nullable=True),
        sa.Column("color", sa.Integer(), nullable=True),
        sa.Column("color_rank", AutoString(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("rank", AutoString(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "label_id"),
    )
    op.create_table(
        "label_chats",
        sa.Column("session_id", AutoString(), nullable=False),
        sa.Column("label_id", AutoString(), nullable=False),
        sa.Column("chat", AutoString(), nullable=False),
        sa.Column("number", AutoString(), nullable=True),
        sa.Column("labeled", sa.Boolean(), nullable=False),
        sa.Column("rank", AutoString(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "label_id", "chat"),
    )
    with op.batch_alter_table("label_chats", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_label_chats_number"), ["number"], unique=False)
    op.create_table(
        "label_messages",
        sa.Column("session_id", AutoString(), nullable=False),
        sa.Column("label_id", AutoString(), nullable=False),
        sa.Column("chat", AutoString(), nullable=False),
        sa.Column("message_id", AutoString(), nullable=False),
        sa.Column("labeled", sa.Boolean(), nullable=False),
        sa.Column("rank", AutoString(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "label_id", "chat", "message_id"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("label_messages")
    with op.batch_alter_table("label_chats", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_label_chats_number"))
    op.drop_table("label_chats")
    op.drop_table("labels")
