"""The runs not finished: ``/metrics`` reads them (:mod:`scheduler.ledger.overview_reads`,
with the other grouped reads only it makes) and the outgoing webhooks' judge of each
unfinished run (:mod:`scheduler.ledger.outbox_store`).
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from scheduler.ledger.models import Run
from scheduler.ledger.queries.tables import runs
from scheduler.ledger.states import RunStatus

#: Runs that are not finished: their own series (``run`` label) stay bounded by these.
UNFINISHED = (RunStatus.PLANNED, RunStatus.RUNNING, RunStatus.PAUSED)


def unfinished_runs(conn: Connection) -> list[Run]:
    """Runs planned, running or paused, by id."""
    rows = conn.execute(select(runs).where(runs.c.status.in_([str(s) for s in UNFINISHED]))
                        .order_by(runs.c.id)).mappings()
    return [Run(**row) for row in rows]
