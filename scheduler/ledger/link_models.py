"""The tracked links' tables (migration 0011): a run's links, how a click finds its
delivery, and the clicks. Kept apart from :mod:`scheduler.ledger.models` (which re-exports
them) so each module stays one screenful of tables."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Text
from sqlmodel import Field

from scheduler.ledger.table_parts import LedgerTable


class Link(LedgerTable, table=True):
    """A tracked link of a run (migration 0011): its number in the run (the one its tokens
    carry), the step it is in and the address it redirects to."""

    __tablename__ = "links"

    run_id: int = Field(primary_key=True)
    link: int = Field(primary_key=True)
    step: int
    url: str = Field(sa_type=Text)


class LinkRow(LedgerTable, table=True):
    """(run, CSV row, step) → delivery, for the steps with links: how a click finds its
    recipient (migration 0011 says why this and not an index on ``deliveries``)."""

    __tablename__ = "link_rows"

    run_id: int = Field(primary_key=True)
    row: int = Field(primary_key=True)
    step: int = Field(primary_key=True)
    delivery_id: int = Field(primary_key=True)


class LinkClick(LedgerTable, table=True):
    """A hit on a valid tracked link: when, the user agent, whether it counts as a click
    and why not (see ``scheduler.links.clicks``); no IP address."""

    __tablename__ = "link_clicks"
    __table_args__ = (Index("ix_link_clicks_run", "run_id", "link"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int
    link: int
    delivery_id: int
    at: datetime
    counted: bool
    why_not: str | None = Field(default=None, sa_type=Text)
    user_agent: str | None = Field(default=None, sa_type=Text)
