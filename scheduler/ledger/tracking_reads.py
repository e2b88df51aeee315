"""Tracking's read side (:mod:`scheduler.tracking.counts`): a run's funnel by its events
and the stored events (``campaign status``'s tracking counts, ``campaign events``), each
one read of the ledger."""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.queries.tables import deliveries, events, replies


class TrackingReads:
    """The reads of tracking's read side, each in a read transaction of its own."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def funnel(self, run_id: int) -> dict[str, int]:
        """``{sent, delivered, read, replied, opted_out}`` of a run (``tq.funnel``)."""
        with access.read(self.engine, f"count the events of run {run_id}") as conn:
            return tq.funnel(conn, run_id).as_dict()

    def events(self, run_id: int | None, after_id: int, last: int | None
               ) -> list[dict[str, Any]]:
        """Stored events after ``after_id`` as column → value, oldest first (only the
        newest ``last`` when given); with ``run_id``, only those about the run: one of its
        message ids, or a reply to it. For ``campaign events``: not a hot path."""
        stmt = select(events).where(events.c.id > after_id)
        if run_id is not None:
            held = select(deliveries.c.message_id_norm).where(
                deliveries.c.run_id == run_id, deliveries.c.message_id_norm.is_not(None))
            replied = select(replies.c.event_id).where(replies.c.run_id == run_id)
            stmt = stmt.where(or_(events.c.message_id_norm.in_(held),
                                  events.c.id.in_(replied)))
        with access.read(self.engine, "read the stored events") as conn:
            if last is not None:
                stmt = stmt.order_by(events.c.id.desc()).limit(last)
                return [dict(r) for r in reversed(list(conn.execute(stmt).mappings()))]
            return [dict(r) for r in conn.execute(stmt.order_by(events.c.id)).mappings()]
