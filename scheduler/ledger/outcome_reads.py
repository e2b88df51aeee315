"""The reads of a run's outcomes beyond its states: each channel's own (SMS reports,
segments and cost; calls' causes, digits and talk time) and the decisions of its steps
that follow replies.

:class:`OutcomeReads` is the door :mod:`scheduler.views.channel_status` and
:mod:`scheduler.views.decisions` read through, on the caller's snapshot (``campaign
status``, ``runs``, the end of a foreground run, the progress bar (throttled), the
dashboard's run page); the calls' run totals are one read of
:mod:`~scheduler.ledger.queries.sender_calls`, the decisions of
:mod:`~scheduler.ledger.queries.conversation`. Why the channels' reads are shaped so:

- each is one ``GROUP BY`` (or one aggregate row), so the database does the
  counting and Python sees a handful of rows whatever the run's size: a 100,000-recipient
  SMS run answers with a few error codes, not 100,000 ``details`` documents to parse;
- what events told beyond a state lives in ``deliveries.details`` (JSON text, see
  :mod:`scheduler.tracking.details`); its keys are read by the database itself
  (``JSON_EXTRACT`` on SQLite, ``CAST(details AS JSONB) ->> key`` on PostgreSQL, chosen by
  :func:`~scheduler.ledger.queries.common.details_key`), only on the run's rows that can
  carry them (``run_id``, ``state`` through the claim index);
- the SMS states collapse ``sms.undelivered``, ``sms.failed`` and ``sms.expired`` into
  ``undelivered`` (a forward-only state rank), so which report it was is read from the
  stored events of the message (``events.message_id_norm`` is indexed): one left join
  on the undelivered rows only, ``MAX(event)`` per row so a repeated or a second report
  counts the message once (``sms.undelivered`` > ``sms.failed`` > ``sms.expired``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import and_, func, literal, select

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import conversation as cq
from scheduler.ledger.queries import sender_calls
from scheduler.ledger.queries.common import details_key, state_in
from scheduler.ledger.queries.tables import deliveries, events
from scheduler.ledger.run_rows import SmsFailureRow
from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S

#: The SMS reports that leave a message ``undelivered``.
SMS_NOT_DELIVERED = ("sms.undelivered", "sms.failed", "sms.expired")
#: States of a call that was placed and has no ``call.ended`` yet (in progress or unreported).
_CALL_OPEN = (S.ACCEPTED, S.SENT, S.ANSWERED)


class SmsTotals(NamedTuple):
    """Segments and cost of the SMS the service took, so far."""

    messages: int
    #: messages whose details carry a segment count (ours, or the service's once reported)
    counted: int
    segments: int
    cost_micro: int
    #: messages whose cost is known (the answer said it, or a price was set for the route)
    priced: int
    #: messages the service counted in other segments than we did (``segmentsCounted``)
    recounted: int


class CallTotals(NamedTuple):
    """How the calls of a run went, besides their states."""

    open_calls: int
    with_digits: int
    talk_seconds: int


class CountedValue(NamedTuple):
    """One value (digits pressed, a cause) and how many calls had it."""

    value: Any
    description: str | None
    n: int


def _sent(run_id: int) -> Any:
    d = deliveries.c
    return and_(d.run_id == run_id, state_in(*SENT_STATES), d.details.is_not(None))


class OutcomeReads:
    """A run's channel outcomes and step decisions, read on ``conn`` (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def sms_totals(self, run_id: int) -> SmsTotals:
        """Segments and cost summed over the messages the service took (one aggregate row)."""
        d = deliveries.c
        segments = details_key(self.conn, "segments").as_integer()
        cost = details_key(self.conn, "costMicroReais").as_integer()
        recounted = details_key(self.conn, "segmentsCounted").as_integer()
        taken = select(func.count()).where(d.run_id == run_id, state_in(*SENT_STATES))
        row = self.conn.execute(select(
            func.count(segments), func.coalesce(func.sum(segments), 0),
            func.coalesce(func.sum(cost), 0), func.count(cost), func.count(recounted),
        ).where(_sent(run_id))).one()
        return SmsTotals(messages=int(self.conn.execute(taken).scalar() or 0),
                         counted=int(row[0]), segments=int(row[1]), cost_micro=int(row[2]),
                         priced=int(row[3]), recounted=int(row[4]))

    def sms_failures(self, run_id: int) -> list[SmsFailureRow]:
        """Undelivered SMS by report (``sms.failed`` …, None when no report is stored) and
        error code, most frequent first."""
        d, e = deliveries.c, events.c
        code = details_key(self.conn, "errorCode").as_string()
        per_row = (
            select(d.id, func.max(e.event).label("event"), func.max(code).label("code"))
            .select_from(deliveries.outerjoin(events, and_(
                e.message_id_norm == d.message_id_norm, e.event.in_(SMS_NOT_DELIVERED))))
            .where(d.run_id == run_id, d.state == S.UNDELIVERED)
            .group_by(d.id)
        ).subquery()
        n = func.count().label("n")
        rows = self.conn.execute(select(per_row.c.event, per_row.c.code, n)
                                 .group_by(per_row.c.event, per_row.c.code)
                                 .order_by(n.desc(), per_row.c.event, per_row.c.code)).all()
        return [SmsFailureRow(event, code_, int(count)) for event, code_, count in rows]

    def call_totals(self, run_id: int) -> CallTotals:
        """Calls placed with no ``call.ended`` yet, calls where keys were pressed, and the
        talk time of the run (one aggregate row)."""
        d = deliveries.c
        digits = details_key(self.conn, "digits").as_string()
        talk = details_key(self.conn, "talkSeconds").as_integer()
        open_calls = select(func.count()).where(d.run_id == run_id, state_in(*_CALL_OPEN),
                                                d.ended_at.is_(None))
        row = self.conn.execute(select(func.count(func.nullif(digits, literal(""))),
                                       func.coalesce(func.sum(talk), 0))
                                .where(_sent(run_id))).one()
        return CallTotals(open_calls=int(self.conn.execute(open_calls).scalar() or 0),
                          with_digits=int(row[0]), talk_seconds=int(row[1]))

    def top_digits(self, run_id: int, limit: int = 5) -> list[CountedValue]:
        """The digit sequences pressed most often (an IVR's answers), with their counts."""
        digits = details_key(self.conn, "digits").as_string()
        n = func.count().label("n")
        rows = self.conn.execute(select(digits, n)
                                 .where(_sent(run_id), digits.is_not(None), digits != "")
                                 .group_by(digits).order_by(n.desc(), digits).limit(limit)).all()
        return [CountedValue(value, None, int(count)) for value, count in rows]

    def not_answered_causes(self, run_id: int) -> list[CountedValue]:
        """Unanswered calls by Q.850 cause (with the service's description), most first."""
        d = deliveries.c
        cause = details_key(self.conn, "cause").as_integer()
        described = details_key(self.conn, "causeDescription").as_string()
        n = func.count().label("n")
        rows = self.conn.execute(select(cause, func.max(described), n)
                                 .where(d.run_id == run_id, d.state == S.NOT_ANSWERED)
                                 .group_by(cause).order_by(n.desc(), cause)).all()
        return [CountedValue(value, text, int(count)) for value, text, count in rows]

    def call_run_totals(self, run_id: int) -> sender_calls.CallRunTotals:
        """A calls run's open, timed and recorded calls and their duration."""
        return sender_calls.call_run_totals(self.conn, run_id)

    def decision_counts(self, run_id: int) -> dict[tuple[int, str], int]:
        """The run's decisions per (step, outcome), rows waiting as (step, ``waiting``)."""
        return cq.decision_counts(self.conn, run_id)

    def latest_decisions(self, run_id: int, limit: int) -> list[dict[str, Any]]:
        """The run's latest ``limit`` decisions, newest first."""
        return cq.decisions_of(self.conn, run_id, limit=limit)
