"""The ledger as the outgoing webhooks' store: give events out, claim, record, read.

:class:`OutboxStore` is the door the delivery loop (:mod:`scheduler.webhooks_out.worker`),
its stuck-run watch and the outbox's readout go through; each method is one transaction
or one read of :mod:`scheduler.ledger.queries.outbox`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime

from scheduler.ledger import access, outbox
from scheduler.ledger.access import Connection, Engine
from scheduler.ledger.models import Run
from scheduler.ledger.overview_reads import OverviewReads
from scheduler.ledger.queries import outbox as oq
from scheduler.ledger.queries.outbox import Claimed, DeliveryRow
from scheduler.ledger.states import RunStatus
from scheduler.outbox.events import RunStuckData

#: A try's outcome: (delivery id, HTTP status, error, delivered, next try or None).
Try = tuple[int, int | None, str | None, bool, datetime | None]


class OutboxStore:
    """The outbox of ``engine``'s ledger (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def has_work(self, now: datetime, subscriptions: Collection[str]) -> tuple[bool, bool]:
        """(events not given out, deliveries due), read without a write transaction."""
        with access.read(self.engine, "look for webhook work") as conn:
            return oq.has_work(conn, now, subscriptions)

    def give_out(self, limit: int, takers: Callable[[str, datetime], Iterable[str]],
                 now: datetime) -> int:
        """Give up to ``limit`` new events a delivery row per subscription ``takers`` names
        (by the event's type and time); how many events were given out."""
        with access.transaction(self.engine, "give webhook events out") as conn:
            events = oq.unfanned(conn, limit)
            rows = [(event_id, key) for event_id, kind, at in events for key in takers(kind, at)]
            oq.fan_out(conn, rows, [event_id for event_id, _kind, _at in events], now)
        return len(events)

    def claim(self, now: datetime, until: datetime, limit: int,
              subscriptions: Collection[str]) -> list[Claimed]:
        """Take the due deliveries of ``subscriptions`` until ``until``."""
        with access.transaction(self.engine, "claim webhook deliveries") as conn:
            return oq.claim(conn, now, until, limit, subscriptions)

    def record(self, now: datetime, tries: Sequence[Try]) -> None:
        """Write each try's outcome."""
        with access.transaction(self.engine, "record webhook deliveries") as conn:
            for delivery_id, status, error, delivered, next_at in tries:
                oq.record_try(conn, delivery_id, now, status=status, error=error,
                              delivered=delivered, next_at=next_at)

    def prune(self, before: datetime) -> int:
        """Drop settled events written before ``before``; how many."""
        with access.transaction(self.engine, "prune old webhook events") as conn:
            return oq.prune(conn, before)

    def readout(self, now: datetime, states: Collection[str] | None, limit: int
                ) -> tuple[dict[tuple[str, str], int], list[DeliveryRow], int]:
        """In one snapshot: deliveries by (subscription, state), the newest ``limit`` (in
        ``states``), and the events not given out yet."""
        with access.snapshot(self.engine, "read the outgoing webhooks") as conn:
            waiting, _backlog = oq.backlog(conn)
            return (oq.counts(conn, now), oq.list_deliveries(conn, states=states, limit=limit),
                    waiting)

    def retry(self, delivery_id: int, now: datetime) -> bool:
        """Make a delivery due now; False when there is no such row."""
        with access.transaction(self.engine, f"retry webhook delivery {delivery_id}") as conn:
            return oq.retry(conn, delivery_id, now)

    def stuck_runs(self, judge: Callable[[Connection, Run], RunStuckData | None]
                   ) -> list[RunStuckData]:
        """The running runs ``judge`` finds stuck, read in one snapshot."""
        with access.snapshot(self.engine, "read whether runs are stuck") as conn:
            found = (judge(conn, run) for run in OverviewReads(conn).unfinished_runs()
                     if run.status == RunStatus.RUNNING and run.id is not None)
            return [data for data in found if data is not None]

    def note_stuck(self, data: RunStuckData, now: datetime) -> bool:
        """``run.stuck`` once per stuck spell; whether it was written."""
        with access.transaction(self.engine, f"note that run {data.run_id} is stuck") as conn:
            return outbox.run_stuck(conn, data, now)


__all__ = ["Claimed", "DeliveryRow", "OutboxStore", "Try"]
