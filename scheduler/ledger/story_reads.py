"""One recipient's story: everything the ledger holds about one number, every run.

:class:`StoryReads` is the door ``campaign recipient`` and the dashboard's recipient page
(:mod:`scheduler.views.recipient_story`) read through, on the caller's snapshot. Hot
queries, kept in one place: the page reads them all in one snapshot, and at a million
deliveries each must stay an index lookup (figure D1):

- deliveries by ``ix_deliveries_to`` ("to", run_id), with their run and the decision on
  their step's condition (``step_decisions``, unique by delivery, where the ledger has
  the conditional steps' table: :data:`DECISIONS`);
- replies by ``ix_replies_number``, events by ``ix_events_number``, with a bound
  (:data:`EVENTS_KEPT`: a number's events are a handful per message);
- clicks by ``ix_link_clicks_delivery`` (migration 0020), with the link's address;
- the number's suppression (its primary key).

The page's search by name (:meth:`StoryReads.numbers_named`) is
:func:`scheduler.ledger.queries.names.numbers_named` (an index of the distinct names'
words, migration 0026).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, select

from scheduler.ledger.access import Connection
from scheduler.ledger.inbox_models import reply_handled
from scheduler.ledger.queries import names
from scheduler.ledger.queries.inbox import STATE
from scheduler.ledger.queries.tables import (
    deliveries,
    events,
    link_clicks,
    links,
    replies,
    runs,
    suppressions,
)

#: At most this many of a number's events are read (its newest).
EVENTS_KEPT = 500


def _decisions() -> Table | None:
    """The conditional steps' ``step_decisions`` table (migration 0019), when the ledger's
    model has it (the seam: without it, the story shows no condition decisions)."""
    try:
        from scheduler.ledger.conversation_models import StepDecision
    except ImportError:  # pragma: no cover - the conditional steps not in this tree
        return None
    table = StepDecision.__table__  # type: ignore[attr-defined]
    assert isinstance(table, Table)
    return table


DECISIONS = _decisions()

#: The delivery columns a story shows, in :class:`StoryDelivery`'s order.
_DELIVERY_COLUMNS = ("id", "run_id", "step", "attempt", "first_id", "rule", "verdict",
                     "variant", "kind", "state", "reason", "sender", "attempts",
                     "last_error", "message_id", "due_at", "dispatched_at", "accepted_at",
                     "sent_at", "delivered_at", "read_at", "replied_at", "failed_at",
                     "ended_at", "updated_at", "variables", "fallback")


@dataclass(frozen=True)
class StoryDelivery:
    """One delivery (a step, or attempt n of one) of the number, with its run."""

    id: int
    run_id: int
    step: int
    attempt: int
    first_id: int | None
    rule: str | None
    verdict: str | None
    variant: str | None
    kind: str
    state: str
    reason: str | None
    sender: str | None
    attempts: int
    last_error: str | None
    message_id: str | None
    due_at: datetime | None
    dispatched_at: datetime | None
    accepted_at: datetime | None
    sent_at: datetime | None
    delivered_at: datetime | None
    read_at: datetime | None
    replied_at: datetime | None
    failed_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime | None
    variables: str | None
    fallback: str | None
    campaign: str
    channel: str
    timezone: str
    #: the condition's decision (``go``/``skip``), why, when; a late reply's note
    decision: str | None = None
    decision_reason: str | None = None
    decided_at: datetime | None = None
    late_note: str | None = None
    late_at: datetime | None = None


@dataclass(frozen=True)
class StoryReply:
    """One reply from the number."""

    id: int
    received_at: datetime
    kind: str
    text: str | None
    opt_out: bool
    run_id: int | None
    delivery_id: int | None
    session_id: str | None
    state: str
    handled_by: str | None
    handled_at: datetime | None


@dataclass(frozen=True)
class StoryEvent:
    """One webhook event about the number (a status, a call, a reply's raw event)."""

    id: int
    event: str
    at: datetime
    session_id: str | None
    result: str | None
    payload: str


@dataclass(frozen=True)
class StoryClick:
    """One hit on a tracked link of one of the number's deliveries."""

    delivery_id: int
    run_id: int
    at: datetime
    counted: bool
    why_not: str | None
    url: str | None


@dataclass(frozen=True)
class StoryOptOut:
    """The number on the shared suppression list."""

    source: str
    reason: str | None
    created_at: datetime


class StoryReads:
    """One number's story and the search of numbers by name, read on ``conn`` (see the
    module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def story_deliveries(self, number: str) -> list[StoryDelivery]:
        """Every delivery to ``number`` (its run's name, channel and zone; the decision on
        its condition), in id order."""
        d = deliveries.c
        columns: list[Any] = [d[name] for name in _DELIVERY_COLUMNS]
        columns += [runs.c.campaign_name, runs.c.channel, runs.c.timezone]
        source: Any = deliveries.join(runs, runs.c.id == d.run_id)
        if DECISIONS is not None:
            s = DECISIONS.c
            columns += [s.outcome, s.reason, s.decided_at, s.late_note, s.late_at]
            source = source.outerjoin(DECISIONS, s.delivery_id == d.id)
        stmt = select(*columns).select_from(source).where(d.to == number).order_by(d.id)
        out = []
        for row in self.conn.execute(stmt):
            values = dict(zip((*_DELIVERY_COLUMNS, "campaign", "channel", "timezone"),
                              row[:len(_DELIVERY_COLUMNS) + 3], strict=True))
            extra = row[len(_DELIVERY_COLUMNS) + 3:]
            if extra:
                values.update(decision=extra[0], decision_reason=extra[1], decided_at=extra[2],
                              late_note=extra[3], late_at=extra[4])
            out.append(StoryDelivery(**values))
        return out

    def story_replies(self, number: str) -> list[StoryReply]:
        """Every reply from ``number``, oldest first, with its state in the inbox."""
        r = replies.c
        source = replies.outerjoin(reply_handled, reply_handled.c.reply_id == r.id)
        stmt = (select(r.id, r.received_at, r.kind, r.text, r.opt_out, r.run_id, r.delivery_id,
                       r.session_id, STATE, reply_handled.c.handled_by,
                       reply_handled.c.handled_at)
                .select_from(source).where(r.number == number).order_by(r.received_at, r.id))
        return [StoryReply(id=int(row[0]), received_at=row[1], kind=str(row[2]), text=row[3],
                           opt_out=bool(row[4]), run_id=row[5], delivery_id=row[6],
                           session_id=row[7], state=str(row[8]), handled_by=row[9],
                           handled_at=row[10]) for row in self.conn.execute(stmt)]

    def story_events(self, number: str) -> list[StoryEvent]:
        """The newest :data:`EVENTS_KEPT` events about ``number``, oldest first."""
        e = events.c
        stmt = (select(e.id, e.event, e.occurred_at, e.received_at, e.session_id, e.result,
                       e.payload).where(e.number == number).order_by(e.id.desc())
                .limit(EVENTS_KEPT))
        found = [StoryEvent(id=int(row[0]), event=str(row[1]), at=row[2] or row[3],
                            session_id=row[4], result=row[5], payload=str(row[6]))
                 for row in self.conn.execute(stmt)]
        return found[::-1]

    def story_clicks(self, delivery_ids: Sequence[int]) -> list[StoryClick]:
        """The link hits of these deliveries, oldest first, with the link's address."""
        if not delivery_ids:
            return []
        c = link_clicks.c
        source = link_clicks.outerjoin(links, (links.c.run_id == c.run_id)
                                       & (links.c.link == c.link))
        stmt = (select(c.delivery_id, c.run_id, c.at, c.counted, c.why_not, links.c.url)
                .select_from(source).where(c.delivery_id.in_(list(delivery_ids)))
                .order_by(c.at, c.id))
        return [StoryClick(delivery_id=int(row[0]), run_id=int(row[1]), at=row[2],
                           counted=bool(row[3]), why_not=row[4], url=row[5])
                for row in self.conn.execute(stmt)]

    def story_opt_out(self, number: str) -> StoryOptOut | None:
        """The number's suppression, if it is suppressed."""
        s = suppressions.c
        row = self.conn.execute(select(s.source, s.reason, s.created_at).where(
            s.number == number)).first()
        return StoryOptOut(source=str(row[0]), reason=row[1], created_at=row[2]) if row else None

    def numbers_named(self, words: str, limit: int) -> list[tuple[str, str]]:
        """``(number, name)`` of the numbers whose name has a word starting with ``words``
        (case and accents aside), at most ``limit``."""
        return names.numbers_named(self.conn, words, limit)
