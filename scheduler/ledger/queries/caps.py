"""When a sender reached a daily cap or plan limit (``campaign status``, a dispatcher that
starts with a sender already at its cap).

Not hot: asked once per sender at its cap (not per send), with the count of the day
already known from :func:`scheduler.ledger.queries.dispatch.sent_today_by_sender`. The
``n``-th send since the start of the day is the one that used the last of a cap of ``n``;
the same rows count as there (every state but ``planned``, across all runs).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, select

from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.states import DeliveryState as S


def nth_send_since(conn: Connection, sender: str, since: datetime, n: int) -> datetime | None:
    """When ``sender``'s ``n``-th send since ``since`` went out (UTC); ``None`` when it has
    sent fewer. One ordered read with an offset: ``n`` is a cap (a few thousand at most)."""
    if n < 1:
        return None
    stmt = (select(deliveries.c.dispatched_at)
            .where(deliveries.c.sender == sender, deliveries.c.dispatched_at >= since,
                   deliveries.c.state != S.PLANNED)
            .order_by(deliveries.c.dispatched_at, deliveries.c.id)
            .offset(n - 1).limit(1))
    found = conn.execute(stmt).scalar()
    if not isinstance(found, datetime):
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
