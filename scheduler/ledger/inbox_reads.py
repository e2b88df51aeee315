"""The inbox's reads: replies across runs with their delivery, step and run, by state.

:class:`InboxReads` is the door ``campaign replies`` and the dashboard's ``/replies`` page
(:mod:`scheduler.views.inbox`) read through, on the caller's snapshot. Hot queries: the
dashboard's inbox reads them every second while a page watches it (its live section), so
each is one statement on an index.

- :meth:`InboxReads.rows`: the newest replies first, by ``ix_replies_received_at``
  (migration 0020) walked backwards and stopped at ``limit``; a run's (or a campaign's
  runs') by ``ix_replies_run_received`` (run_id, received_at) the same way. Each reply's
  delivery (its step, attempt, sender, CSV values for the name), run (campaign) and
  handling are joined by primary key, for the rows shown only.
- :meth:`InboxReads.state_counts`: how many replies each state holds (the filter's tabs),
  one grouped count over the filtered replies (it reads each of them: 17,315 replies take
  a few ms; a ledger of millions of replies would want kept counts, as ``run_tallies``).
- :meth:`InboxReads.run_replies`: one run's newest replies (``GET /api/v1/runs/{id}/
  replies``, :mod:`scheduler.api.reads`), by ``replies.run_id``.

A reply's state and what "to answer" means: :mod:`scheduler.ledger.queries.inbox`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, not_, select

from scheduler.ledger.access import Connection
from scheduler.ledger.inbox_models import reply_handled
from scheduler.ledger.queries.inbox import HANDLED, STATE, TO_ANSWER
from scheduler.ledger.queries.tables import deliveries, replies, runs
from scheduler.ledger.run_reads import RunSamples
from scheduler.ledger.run_rows import EventRow

#: The states of a reply, in the order the inbox offers them.
STATES = ("new", "to answer", "handled")


@dataclass(frozen=True)
class InboxFilter:
    """What the inbox shows: one run, one campaign, one state, since a time (None: all)."""

    run_id: int | None = None
    campaign: str | None = None
    state: str | None = None
    since: datetime | None = None


@dataclass(frozen=True)
class InboxRow:
    """One reply with what it answers."""

    id: int
    received_at: datetime
    number: str
    kind: str
    text: str | None
    opt_out: bool
    state: str
    run_id: int | None
    campaign: str | None
    timezone: str | None
    delivery_id: int | None
    step: int | None
    attempt: int | None
    sender: str | None
    session_id: str | None
    variables: str | None
    handled_by: str | None
    handled_at: datetime | None


def _joined(columns: list[Any], with_delivery: bool) -> Any:
    source = replies.outerjoin(reply_handled, reply_handled.c.reply_id == replies.c.id)
    source = source.outerjoin(runs, runs.c.id == replies.c.run_id)
    if with_delivery:
        source = source.outerjoin(deliveries, deliveries.c.id == replies.c.delivery_id)
    return select(*columns).select_from(source)


def _where(stmt: Any, chosen: InboxFilter, *, with_state: bool = True) -> Any:
    if chosen.run_id is not None:
        stmt = stmt.where(replies.c.run_id == chosen.run_id)
    if chosen.campaign is not None:
        stmt = stmt.where(runs.c.campaign_name == chosen.campaign)
    if chosen.since is not None:
        stmt = stmt.where(replies.c.received_at >= chosen.since)
    if with_state and chosen.state == "handled":
        stmt = stmt.where(HANDLED)
    elif with_state and chosen.state == "to answer":
        stmt = stmt.where(reply_handled.c.reply_id.is_(None), TO_ANSWER)
    elif with_state and chosen.state == "new":
        stmt = stmt.where(reply_handled.c.reply_id.is_(None), not_(TO_ANSWER))
    return stmt


class InboxReads:
    """The inbox's replies and counts, read on ``conn`` (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def rows(self, chosen: InboxFilter, limit: int) -> list[InboxRow]:
        """The newest ``limit`` replies ``chosen`` lets through, newest first."""
        r, d = replies.c, deliveries.c
        stmt = _joined([r.id, r.received_at, r.number, r.kind, r.text, r.opt_out, STATE,
                        r.run_id, runs.c.campaign_name, runs.c.timezone, r.delivery_id,
                        d.step, d.attempt, d.sender, r.session_id, d.variables,
                        reply_handled.c.handled_by, reply_handled.c.handled_at], True)
        stmt = _where(stmt, chosen).order_by(r.received_at.desc(), r.id.desc()).limit(limit)
        return [InboxRow(id=int(row[0]), received_at=row[1], number=str(row[2]),
                         kind=str(row[3]), text=row[4], opt_out=bool(row[5]),
                         state=str(row[6]), run_id=row[7], campaign=row[8],
                         timezone=row[9], delivery_id=row[10], step=row[11],
                         attempt=row[12], sender=row[13], session_id=row[14],
                         variables=row[15], handled_by=row[16], handled_at=row[17])
                for row in self.conn.execute(stmt)]

    def state_counts(self, chosen: InboxFilter) -> dict[str, int]:
        """How many of the replies ``chosen`` lets through (its state aside) are in each
        state."""
        stmt = _where(_joined([STATE, func.count()], False), chosen, with_state=False)
        found = {str(state): int(n) for state, n in self.conn.execute(stmt.group_by(STATE))}
        return {state: found.get(state, 0) for state in STATES}

    def run_replies(self, run_id: int, limit: int) -> list[EventRow]:
        """Run ``run_id``'s newest ``limit`` replies, newest first, each with its
        delivery's CSV values (``RunSamples.replies``)."""
        return RunSamples(self.conn).replies(run_id, limit)
