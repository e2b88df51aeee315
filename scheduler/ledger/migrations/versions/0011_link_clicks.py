"""link clicks

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 15:00:00

Tracked links (issue 24, :mod:`scheduler.links`):

- ``links``: one row per link of a run, numbered in the run (``link``, the number its
  tokens carry), with the step it is in and the address it redirects to. Written with the
  plan, in its transaction; a re-plan keeps the numbers and adds new links after them.
- ``link_rows``: (run, CSV row, step) → delivery, for the steps that have links, rebuilt
  with each plan in its transaction: a click finds its recipient by its primary key. The
  alternative, an index on ``deliveries (run_id, row)``, would cost every plan of every
  campaign a fourth index to write; this costs only the campaigns with links.
- ``link_clicks``: every hit on a valid link: the run, link and delivery (the recipient's
  row of that step), when, the user agent (cut to 300 characters), whether it counts as a
  click and, when not, why (a link-preview fetcher, a HEAD request, too soon after the
  send). No IP address is kept. ``ix_link_clicks_run`` on (run_id, link) serves the
  report's per-link counts.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlmodel.sql.sqltypes import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "links",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("link", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "link"),
    )
    op.create_table(
        "link_rows",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("row", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "row", "step", "delivery_id"),
    )
    op.create_table(
        "link_clicks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("link", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("counted", sa.Boolean(), nullable=False),
        sa.Column("why_not", sa.Text(), nullable=True),
        sa.Column("user_agent", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_link_clicks_run", "link_clicks", ["run_id", "link"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_link_clicks_run", table_name="link_clicks")
    op.drop_table("link_clicks")
    op.drop_table("link_rows")
    op.drop_table("links")
