"""What the ledger knows of each sender's recent sends: the signals of its health score.

The engine counts 429s and server errors itself (they never reach a row); the rest is
here, per sender, over the rows dispatched through it since the start of the health
window, in every run: sends, rows the service refused (``failed``), rows whose send was
never confirmed (``unknown``), sends not delivered after a set time, replies, and
opt-outs (replies marked ``opt_out`` on a delivery of that sender).

Asked every health tick (a minute, per run): one ``GROUP BY`` over
``ix_deliveries_sender_dispatched`` (the window's rows of the pool's senders only) and one
join of the window's replies.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import and_, case, func, or_, select

from scheduler.ledger.access import Connection
from scheduler.ledger.queries.tables import deliveries, replies
from scheduler.ledger.states import DeliveryState as S

#: Taken by the service, not yet delivered (WhatsApp), or reported undelivered (SMS).
_NOT_DELIVERED = (S.ACCEPTED, S.SENT)


class SenderSignals(NamedTuple):
    """One sender's counts over the window (see the module)."""

    sends: int = 0
    refused: int = 0
    never_sent: int = 0
    undelivered: int = 0
    replies: int = 0
    opt_outs: int = 0


def signals_since(conn: Connection, senders: Collection[str], since: datetime,
                  undelivered_before: datetime) -> dict[str, SenderSignals]:
    """Each of ``senders``' signals over rows dispatched at or after ``since``; a send
    accepted before ``undelivered_before`` and still not delivered counts as undelivered."""
    if not senders:
        return {}
    d = deliveries.c
    late = or_(d.state == S.UNDELIVERED,
               and_(d.state.in_(_NOT_DELIVERED),
                    func.coalesce(d.sent_at, d.accepted_at) < undelivered_before))
    window = and_(d.sender.in_(sorted(senders)), d.dispatched_at >= since)
    rows = conn.execute(
        select(d.sender, func.count(),
               func.sum(case((d.state == S.FAILED, 1), else_=0)),
               func.sum(case((d.state == S.UNKNOWN, 1), else_=0)),
               func.sum(case((late, 1), else_=0)),
               func.sum(case((d.replied_at.is_not(None), 1), else_=0)))
        .where(window, d.state.not_in((S.PLANNED, S.DISPATCHING)))
        .group_by(d.sender))
    counts = {sender: [int(n or 0) for n in rest] for sender, *rest in rows}
    r = replies.c
    opted = conn.execute(
        select(d.sender, func.count(func.distinct(r.delivery_id)))
        .select_from(replies.join(deliveries, d.id == r.delivery_id))
        .where(window, r.opt_out.is_(True)).group_by(d.sender))
    out = {}
    for sender in senders:
        sends, refused, never, late_n, replied = counts.get(sender, [0, 0, 0, 0, 0])
        out[sender] = SenderSignals(sends, refused, never, late_n, replied, 0)
    for sender, n in opted:
        if sender in out:
            out[sender] = out[sender]._replace(opt_outs=int(n))
    return out


def last_sends(conn: Connection, senders: Collection[str]) -> dict[str, datetime]:
    """Each sender's latest dispatch, any run (warm-up restarts after an idle spell):
    ``MAX`` over ``ix_deliveries_sender_dispatched``, one sender at a time."""
    d = deliveries.c
    out = {}
    for sender in sorted(senders):
        at = conn.execute(select(func.max(d.dispatched_at)).where(d.sender == sender)
                          ).scalar()
        if at is not None:
            out[sender] = at
    return out


def sends_by_sender(conn: Connection, run_id: int) -> dict[str | None, int]:
    """The run's rows by sender, every state but ``skipped`` (what each sender took)."""
    d = deliveries.c
    return {sender: int(n) for sender, n in conn.execute(
        select(d.sender, func.count()).where(d.run_id == run_id, d.state != S.SKIPPED)
        .group_by(d.sender))}


__all__ = ["SenderSignals", "last_sends", "sends_by_sender", "signals_since"]
