"""What ``campaign workers`` and ``campaign status`` show of the ledger's workers: the live
ones, the senders each holds, their last heartbeat."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel

from scheduler.dispatch.shares import TRIGGER_LEASE, holds
from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.lease import worker_is_live
from scheduler.ledger.worker_reads import WorkerReads

if TYPE_CHECKING:  # the reads only (issue 32: status, on PostgreSQL, loads no writer)
    from scheduler.ledger.core import LedgerCore


class WorkerInfo(BaseModel):
    """One live worker."""

    id: str
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age_s: float
    trigger_leader: bool
    senders: list[str]
    #: Where it sends (``runs.target``'s form; None: registered before it was recorded).
    target: str | None = None


class WorkersView(BaseModel):
    """The live workers of a ledger (``campaign workers --json``)."""

    lease_s: float
    workers: list[WorkerInfo]
    #: Senders leased to no live worker (free, or a dead worker's until its lease expires).
    unheld: list[str]


def workers_view(ledger: LedgerCore, lease_s: float, now: datetime) -> WorkersView:
    """The live workers, the senders each holds now, and the senders nobody holds."""
    with access.read(ledger.engine, "read the workers and their leases") as conn:
        return read_workers(conn, lease_s, now)


def read_workers(conn: Connection, lease_s: float, now: datetime) -> WorkersView:
    """:func:`workers_view` read on ``conn`` (a caller's snapshot)."""
    lease = timedelta(seconds=lease_s)
    reads = WorkerReads(conn)
    live = [w for w in reads.live(now - lease) if worker_is_live(w, now, lease)]
    leases = reads.leases()
    infos = []
    for w in live:
        mine = [row.sender for row in leases if holds(row, w.id, now)]
        infos.append(WorkerInfo(
            id=w.id, host=w.host, pid=w.pid, started_at=w.started_at,
            heartbeat_at=w.heartbeat_at,
            heartbeat_age_s=round((now - w.heartbeat_at).total_seconds(), 1),
            trigger_leader=TRIGGER_LEASE in mine,
            senders=[s for s in mine if s != TRIGGER_LEASE], target=w.target))
    held = {s for info in infos for s in info.senders}
    unheld = sorted(row.sender for row in leases
                    if row.sender != TRIGGER_LEASE and row.sender not in held)
    return WorkersView(lease_s=lease_s, workers=infos, unheld=unheld)


def served_by_workers(ledger: LedgerCore, lease_s: float, now: datetime) -> int:
    """How many ``campaign serve`` workers are live on this PostgreSQL ledger (0 on SQLite,
    where a run is continued by the process that resumes it)."""
    if ledger.engine.dialect.name == "sqlite":
        return 0
    return len(workers_view(ledger, lease_s, now).workers)
