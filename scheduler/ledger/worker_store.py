"""The workers of ``campaign serve`` as a store: their rows, sender leases, and the rows a
dead worker left in doubt.

:class:`WorkerStore` is the ledger's implementation of
:class:`scheduler.dispatch.store.WorkerStore` (held by
:class:`scheduler.dispatch.workers.WorkerSeat`). Each method is one transaction or one read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime

from sqlalchemy import case, func, select

from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.lease import owner_alive
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.rows import LeaseRow, WorkerRow
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from scheduler.settings.run import RunOptions


def day_sends(conn: Connection, since: datetime, senders: Collection[str]
              ) -> dict[str, tuple[int, datetime | None]]:
    """Per sender of ``senders`` with a row dispatched since ``since`` (the start of the
    campaign's day), by any process in any run: (its sends, the latest one's dispatch
    time). A row back in ``planned`` (a retry) is no send of the day, but its time still
    counts for the pace: the service saw that request.

    A sender moves between ``campaign serve`` workers (a lease taken over, or given up to
    a newcomer), and a run may pass from a foreground ``campaign run`` to the workers: the
    new holder counts the day's sends through the sender toward its daily cap and plan
    limit, and paces on from the latest of them, whoever made it (the ledger's rows are
    the one record every process writes). Once per sender taken over, never on the hot
    path: one ``GROUP BY`` (the same scan as the day's count alone, with the latest time
    from it).
    """
    if not senders:
        return {}
    sent = func.sum(case((deliveries.c.state != S.PLANNED, 1), else_=0))
    stmt = (select(deliveries.c.sender, sent, func.max(deliveries.c.dispatched_at))
            .where(deliveries.c.sender.in_(list(senders)),
                   deliveries.c.dispatched_at >= since)
            .group_by(deliveries.c.sender))
    return {sender: (int(n or 0), latest) for sender, n, latest in conn.execute(stmt)}


class WorkerStore:
    """The ledger as the workers' store (see the module)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.clock = ledger.clock
        #: Leases on PostgreSQL; SQLite has one worker, which sends through every sender.
        self.leasing = ledger.engine.dialect.name != "sqlite"

    def register(self, worker: str, host: str, pid: int, now: datetime,
                 target: str | None, *, alone_since: datetime | None,
                 is_live: Callable[[WorkerRow], bool]) -> WorkerRow | None:
        """Join the workers; with ``alone_since`` (no leasing), a live worker heard from
        since then (``is_live``) is returned instead and nothing is registered."""
        with access.transaction(self.ledger.engine, "register this worker") as conn:
            if alone_since is not None:
                others = [w for w in lq.live_workers(conn, alone_since) if is_live(w)]
                if others:
                    return others[0]
            lq.register_worker(conn, worker, host, pid, now, target)
            return None

    def day_sends(self, since: datetime, senders: Collection[str]
                  ) -> dict[str, tuple[int, datetime | None]]:
        """Per sender, its sends since ``since`` in any run and its latest claim
        (:func:`day_sends`)."""
        with access.read(self.ledger.engine, "read today's sends of the senders taken") as conn:
            return day_sends(conn, since, senders)

    def beat(self, worker: str, now: datetime, wanted: int) -> None:
        """The worker's heartbeat (and how many senders its dispatchers want)."""
        with access.transaction(self.ledger.engine, "record this worker's heartbeat") as conn:
            lq.beat_worker(conn, worker, now, wanted)

    def renew(self, worker: str, now: datetime, until: datetime, wanted: int,
              give_up: Collection[str], live_since: datetime
              ) -> tuple[set[str], list[LeaseRow], list[str]]:
        """Heartbeat, renew the worker's leases and give up ``give_up``, in one
        transaction: (renewed senders, every lease, the live workers wanting senders)."""
        with access.transaction(self.ledger.engine, "renew this worker's leases") as conn:
            lq.beat_worker(conn, worker, now, wanted)
            renewed = lq.renew(conn, worker, now, until)
            lq.release(conn, worker, give_up, now)
            leases = lq.all_leases(conn)
            # a worker still starting (no dispatcher ready) takes no share yet: counting it
            # would leave a dead worker's senders idle until it is ready
            live = [w.id for w in lq.live_workers(conn, live_since) if w.wants]
        return renewed, leases, live

    def acquire(self, sender: str, worker: str, now: datetime, until: datetime
                ) -> LeaseRow | None:
        """Take ``sender``'s lease (None: another worker holds it)."""
        with access.transaction(self.ledger.engine, f"take the {sender} lease") as conn:
            return lq.acquire(conn, sender, worker, now, until)

    def take_over(self, sender: str, worker: str, now: datetime, until: datetime,
                  run_ids: Sequence[int]) -> tuple[LeaseRow, list[tuple[int, int]]] | None:
        """Take ``sender`` and list the (run, row) its previous holder left in doubt, in
        one transaction; None when another worker was faster."""
        with access.transaction(self.ledger.engine, f"take sender {sender}") as conn:
            lease = lq.acquire(conn, sender, worker, now, until)
            if lease is None:
                return None
            return lease, list(lq.rows_to_take_over(conn, run_ids, sender, worker))

    def run_for_settling(self, run_id: int) -> tuple[str, RunOptions, datetime | None]:
        """A run's channel, stored options and start (to settle its rows in doubt)."""
        run = self.ledger.get_run(run_id)
        return run.channel, self.ledger.options(run), run.started_at

    def orphaned_rows(self, run_id: int, now: datetime, live_since: datetime,
                      worker: str) -> set[int]:
        """The run's rows left ``dispatching`` by a worker (or a single process) no longer
        live."""
        run = self.ledger.get_run(run_id)
        with access.read(self.ledger.engine, "look for rows a dead worker left in doubt") as conn:
            live = [w.id for w in lq.live_workers(conn, live_since)]
            return set(lq.orphaned_rows(conn, run_id, [*live, worker],
                                        unowned=not owner_alive(run, now)))

    def stop(self, worker: str, now: datetime) -> None:
        """The worker leaves: no longer live, its leases given up."""
        with access.transaction(self.ledger.engine, "stop this worker") as conn:
            lq.stop_worker(conn, worker, now)


__all__ = ["WorkerStore", "day_sends"]
