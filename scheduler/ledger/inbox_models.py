"""The inbox's table and indexes (migration 0020): who marked a reply as handled, and when.

Kept apart from :mod:`scheduler.ledger.models` like the experiments' and the step
decisions' tables. ``reply_handled`` holds one row per handled reply (its primary key is
the reply's id, so marking twice keeps the first person and time). The indexes added to
existing tables here are those the inbox and a recipient's story read by (see
:mod:`scheduler.ledger.queries.inbox` and :mod:`scheduler.ledger.queries.recipient_story`):

- ``ix_replies_received_at``: the inbox lists replies newest first across runs;
- ``ix_replies_run_received`` (run_id, received_at): one run's (or campaign's), newest
  first, without sorting the run's replies (at a million deliveries a run may hold tens
  of thousands);
- ``ix_link_clicks_delivery``: a recipient's clicks, by the ids of their deliveries.

(A recipient's deliveries are found by ``ix_deliveries_to`` ("to", run_id), their replies
by ``ix_replies_number`` and their events by ``ix_events_number``: those existed already.)
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Table
from sqlmodel import Field

from scheduler.ledger.models import LinkClick, Reply
from scheduler.ledger.table_parts import LedgerTable


class ReplyHandled(LedgerTable, table=True):
    """A reply a person has dealt with: who (the dashboard's user, or the CLI's name) and
    when. A reply without a row here is new, or to answer."""

    __tablename__ = "reply_handled"

    reply_id: int = Field(primary_key=True)
    handled_by: str
    handled_at: datetime


def _table(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel for table=True
    assert isinstance(table, Table)
    return table


reply_handled = _table(ReplyHandled)

#: Indexes of migration 0020 on the tables of :mod:`scheduler.ledger.models` (declared here
#: so that the models' module stays as it was; they join those tables' metadata).
REPLIES_RECEIVED = Index("ix_replies_received_at", _table(Reply).c.received_at)
REPLIES_RUN_RECEIVED = Index("ix_replies_run_received", _table(Reply).c.run_id,
                             _table(Reply).c.received_at)
CLICKS_DELIVERY = Index("ix_link_clicks_delivery", _table(LinkClick).c.delivery_id)
