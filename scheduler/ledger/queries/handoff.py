"""What a worker taking a sender over reads of its previous holders' sends through it.

A sender moves between ``campaign serve`` workers (a lease taken over, or given up to a
newcomer), and a run may pass from a foreground ``campaign run`` to the workers. The new
holder counts the day's sends through the sender toward its daily cap and plan limit, and
paces on from the latest of them, whoever made it: the ledger's rows are the one record
every process writes.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Connection, case, func, select

from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.states import DeliveryState as S


def day_sends(conn: Connection, since: datetime, senders: Collection[str]
              ) -> dict[str, tuple[int, datetime | None]]:
    """Per sender of ``senders`` with a row dispatched since ``since`` (the start of the
    campaign's day), by any process in any run: (its sends, the latest one's dispatch
    time). A row back in ``planned`` (a retry) is no send of the day, but its time still
    counts for the pace: the service saw that request.

    Once per sender taken over, never on the hot path: one ``GROUP BY`` (the same scan as
    the day's count alone, with the latest time from it).
    """
    if not senders:
        return {}
    sent = func.sum(case((deliveries.c.state != S.PLANNED, 1), else_=0))
    stmt = (select(deliveries.c.sender, sent, func.max(deliveries.c.dispatched_at))
            .where(deliveries.c.sender.in_(list(senders)),
                   deliveries.c.dispatched_at >= since)
            .group_by(deliveries.c.sender))
    return {sender: (int(n or 0), latest) for sender, n, latest in conn.execute(stmt)}
