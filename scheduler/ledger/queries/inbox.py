"""The inbox's SQL: replies across runs with their delivery, step and run, by state.

Hot queries, kept in one place: the dashboard's inbox reads them every second while a
page watches it (its live section), so each is one statement on an index.

- :func:`inbox_rows`: the newest replies first, by ``ix_replies_received_at`` (migration
  0020) walked backwards and stopped at ``limit``; a run's (or a campaign's runs') by
  ``ix_replies_run_received`` (run_id, received_at) the same way.
  Each reply's delivery (its step, attempt, sender, CSV values for the name), run
  (campaign) and handling are joined by primary key, for the rows shown only.
- :func:`state_counts`: how many replies each state holds (the filter's tabs), one
  grouped count over the filtered replies (it reads each of them: 17,315 replies take
  a few ms; a ledger of millions of replies would want kept counts, as ``run_tallies``).
- :func:`mark_handled`: who handled a reply and when (``reply_handled``, its primary key
  the reply's id: marking again keeps the first).

A reply's state (:data:`STATES`): ``handled`` once a person marked it; otherwise ``to
answer`` when a person should read it, else ``new``. "To answer" is the ``replies.
to_answer`` flag where the ledger has it (migration 0019: set on a reply that opts out of
nothing, cleared when a step's condition takes it); on a ledger model without it, a reply
that is not an opt-out (:data:`TO_ANSWER`, the one seam to change).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, func, not_, select

from scheduler.ledger.inbox_models import reply_handled
from scheduler.ledger.queries.common import insert_or_ignore
from scheduler.ledger.queries.tables import deliveries, replies, runs

#: The states of a reply, in the order the inbox offers them.
STATES = ("new", "to answer", "handled")

#: A reply a person should read (see the module): the conditional steps' flag where the
#: reply table has it, else "not an opt-out" (handled replies are left out by the state).
TO_ANSWER: Any = (replies.c.to_answer.is_(True) if "to_answer" in replies.c
                  else not_(replies.c.opt_out))

_HANDLED = reply_handled.c.reply_id.is_not(None)
#: The state as SQL (``handled``, ``to answer``, ``new``).
STATE: Any = case((_HANDLED, "handled"), (TO_ANSWER, "to answer"), else_="new")


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
        stmt = stmt.where(_HANDLED)
    elif with_state and chosen.state == "to answer":
        stmt = stmt.where(reply_handled.c.reply_id.is_(None), TO_ANSWER)
    elif with_state and chosen.state == "new":
        stmt = stmt.where(reply_handled.c.reply_id.is_(None), not_(TO_ANSWER))
    return stmt


def inbox_rows(conn: Connection, chosen: InboxFilter, limit: int) -> list[InboxRow]:
    """The newest ``limit`` replies ``chosen`` lets through, newest first."""
    r, d = replies.c, deliveries.c
    stmt = _joined([r.id, r.received_at, r.number, r.kind, r.text, r.opt_out, STATE,
                    r.run_id, runs.c.campaign_name, runs.c.timezone, r.delivery_id, d.step,
                    d.attempt, d.sender, r.session_id, d.variables,
                    reply_handled.c.handled_by, reply_handled.c.handled_at], True)
    stmt = _where(stmt, chosen).order_by(r.received_at.desc(), r.id.desc()).limit(limit)
    return [InboxRow(id=int(row[0]), received_at=row[1], number=str(row[2]),
                     kind=str(row[3]), text=row[4], opt_out=bool(row[5]), state=str(row[6]),
                     run_id=row[7], campaign=row[8], timezone=row[9], delivery_id=row[10],
                     step=row[11], attempt=row[12], sender=row[13], session_id=row[14],
                     variables=row[15], handled_by=row[16], handled_at=row[17])
            for row in conn.execute(stmt)]


def state_counts(conn: Connection, chosen: InboxFilter) -> dict[str, int]:
    """How many of the replies ``chosen`` lets through (its state aside) are in each state."""
    stmt = _where(_joined([STATE, func.count()], False), chosen, with_state=False)
    found = {str(state): int(n) for state, n in conn.execute(stmt.group_by(STATE))}
    return {state: found.get(state, 0) for state in STATES}


def newest_handling(conn: Connection) -> tuple[int, datetime | None]:
    """How many replies are handled, and the latest time one was (the live section's
    version changes when either does)."""
    row = conn.execute(select(func.count(), func.max(reply_handled.c.handled_at))).one()
    return int(row[0]), row[1]


def reply_exists(conn: Connection, reply_id: int) -> bool:
    """Whether the ledger holds reply ``reply_id``."""
    return conn.execute(select(replies.c.id).where(replies.c.id == reply_id)).first() \
        is not None


def mark_handled(conn: Connection, reply_id: int, by: str, at: datetime) -> bool:
    """Record that ``by`` handled reply ``reply_id`` at ``at``; False when it was already
    (the first person and time are kept)."""
    stmt = insert_or_ignore(conn.dialect.name, reply_handled).values(
        reply_id=reply_id, handled_by=by, handled_at=at).on_conflict_do_nothing(
        index_elements=["reply_id"]).returning(reply_handled.c.reply_id)
    return conn.execute(stmt).first() is not None  # (rowcount: -1 on some drivers)


def handled_by(conn: Connection, reply_id: int) -> tuple[str, datetime] | None:
    """Who handled reply ``reply_id`` and when (None: nobody yet)."""
    row = conn.execute(select(reply_handled.c.handled_by, reply_handled.c.handled_at)
                       .where(reply_handled.c.reply_id == reply_id)).first()
    return (str(row[0]), row[1]) if row is not None else None

