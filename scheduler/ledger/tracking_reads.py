"""Tracking's read side (:mod:`scheduler.tracking.counts`): a run's funnel by its events
and the stored events (``campaign status``'s tracking counts, ``campaign events``), each
one read of the ledger."""

from __future__ import annotations

from typing import Any

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import events as eq
from scheduler.ledger.queries import tracking as tq


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
        """Stored events after ``after_id``, oldest first (only the newest ``last`` when
        given; with ``run_id``, only those about the run), column → value."""
        with access.read(self.engine, "read the stored events") as conn:
            return eq.events_about(conn, run_id, after_id, last)
