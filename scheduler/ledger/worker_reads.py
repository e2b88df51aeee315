"""The ledger's read door of its ``campaign serve`` workers, over the caller's connection.

:class:`WorkerReads` serves ``campaign workers`` and the workers' parts of ``campaign
status``, ``runs`` and a run's page (:mod:`scheduler.views.workers`,
:mod:`scheduler.views.unserved`): the caller opens the read (``access.read`` or its
snapshot) and builds the door on it. Each method is one read of :mod:`.queries.leases`.
"""

from __future__ import annotations

from datetime import datetime

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.rows import LeaseRow, WorkerRow


class WorkerReads:
    """The workers and their sender leases (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def live(self, since: datetime) -> list[WorkerRow]:
        """Workers not stopped whose heartbeat is not older than ``since``, by id."""
        return lq.live_workers(self.conn, since)

    def leases(self) -> list[LeaseRow]:
        """Every lease row, by sender."""
        return lq.all_leases(self.conn)


__all__ = ["WorkerReads"]
