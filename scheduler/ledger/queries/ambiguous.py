"""Rows in doubt (``dispatching`` after a crash or a time-out, ``unknown``) and the events
that prove them sent (``messages.sent``; ``sms.*`` and ``call.*`` for SMS and voice).

Both the dispatcher (:mod:`scheduler.dispatch.reconcile`, at start-up and when a grace
ends) and the receiver (:mod:`scheduler.tracking.apply`, when the proof arrives late) settle
such rows, with the same statements: a row is proven ``sent`` only by an event to the same
number from the same sender, whose message id no delivery holds yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, and_, or_, select, update

from scheduler.ledger.queries.common import state_in
from scheduler.ledger.queries.dispatch import AMBIGUOUS_COLUMNS
from scheduler.ledger.queries.tables import deliveries, events
from scheduler.ledger.rows import AmbiguousRow, SentProof
from scheduler.ledger.states import DeliveryState as S

#: States a ``messages.sent`` may still prove ``sent``: ``dispatching`` / ``unknown``, and
#: ``accepted`` when the service's answer carried no message id.
_PROVABLE = or_(state_in(S.DISPATCHING, S.UNKNOWN),
                and_(deliveries.c.state == S.ACCEPTED, deliveries.c.message_id.is_(None)))


def verifying_due(conn: Connection, run_id: int, now: datetime) -> list[AmbiguousRow]:
    """Rows whose verification grace is over (``dispatching`` with ``due_at`` passed)."""
    stmt = select(*AMBIGUOUS_COLUMNS).where(
        deliveries.c.run_id == run_id, deliveries.c.state == S.DISPATCHING,
        deliveries.c.due_at.is_not(None), deliveries.c.due_at <= now,
    )
    return [AmbiguousRow(*r) for r in conn.execute(stmt)]


def sent_events_for(conn: Connection, number: str, session_id: str | None,
                    since: datetime | None, *,
                    names: Sequence[str] = ("messages.sent",)) -> list[SentProof]:
    """Events proving a send (``names``: ``messages.sent``, or a channel's account events)
    to ``number`` (from ``session_id``) at or after ``since``, whose message id no delivery
    holds yet, oldest first."""
    conds = [events.c.event.in_(list(names)), events.c.number == number,
             events.c.message_id_norm.is_not(None)]
    if session_id is not None:
        conds.append(events.c.session_id == session_id)
    if since is not None:
        conds.append(events.c.received_at >= since)
    taken = select(deliveries.c.message_id_norm).where(
        deliveries.c.message_id_norm == events.c.message_id_norm
    ).exists()
    stmt = (
        select(events.c.message_id_norm, events.c.occurred_at)
        .where(and_(*conds), ~taken)
        .order_by(events.c.id)
    )
    return [SentProof(m, t) for m, t in conn.execute(stmt)]


def ambiguous_row_for(conn: Connection, number: str, sender: str | None,
                      latest_dispatch: datetime, *, kinds: Sequence[str] = (),
                      strict_kinds: Sequence[str] = (),
                      only_kinds: Sequence[str] = ()) -> int | None:
    """The oldest row to ``number`` from ``sender`` that a ``messages.sent`` could prove sent.

    Candidates: ``dispatching`` / ``unknown`` rows, and ``accepted`` rows whose answer had
    no message id, dispatched no later than ``latest_dispatch`` (the event time + skew).
    A row whose kind is in ``strict_kinds`` must also be one of ``kinds`` (an album's image
    never proves a text sent); with ``only_kinds`` the row must be of one of them (an SMS
    report proves only an SMS).
    """
    conds = [
        deliveries.c.to == number, _PROVABLE,
        or_(deliveries.c.dispatched_at.is_(None), deliveries.c.dispatched_at <= latest_dispatch),
    ]
    if sender is not None:
        conds.append(deliveries.c.sender == sender)
    if only_kinds:
        conds.append(deliveries.c.kind.in_(list(only_kinds)))
    if strict_kinds:
        conds.append(or_(deliveries.c.kind.in_(list(kinds)),
                         deliveries.c.kind.not_in(list(strict_kinds))))
    stmt = (select(deliveries.c.id).where(*conds)
            .order_by(deliveries.c.dispatched_at, deliveries.c.id).limit(1))
    return conn.execute(stmt).scalar()


def mark_proven_sent(conn: Connection, delivery_id: int, message_id_norm: str,
                     at: datetime | None, now: datetime) -> bool:
    """A row in doubt proven sent by a ``messages.sent`` no delivery held: ``sent`` with that
    message id, at the event's time (``now`` when it had none). False when the row is no
    longer in doubt (something else settled it meanwhile)."""
    result = conn.execute(
        update(deliveries)
        .where(deliveries.c.id == delivery_id, _PROVABLE)
        .values(state=S.SENT, message_id=message_id_norm, message_id_norm=message_id_norm,
                sent_at=at or now, due_at=None, updated_at=now)
    )
    return bool(result.rowcount)
