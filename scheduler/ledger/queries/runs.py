"""A run's own row: status, control requests, the owner's lease, plan bookkeeping.

None of these is hot: a run's row is written a few times per second at most (the owner's
heartbeat every half second), so they are plain single-row statements.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update

from scheduler.ledger.queries.tables import deliveries, runs
from scheduler.ledger.states import DeliveryState as S


def update_run(conn: Connection, run_id: int, /, **values: Any) -> None:
    """Set columns of the run (status, control, stop_reason, times, definition …)."""
    conn.execute(update(runs).where(runs.c.id == run_id).values(**values))


def update_unfinished_run(conn: Connection, run_id: int, finished: Any, /,
                          **values: Any) -> bool:
    """Set columns of the run unless its status is one of ``finished`` already; True when
    set. Several workers end one run: the first to see a cancel ends it cancelled, and a
    worker that then finds no work left must not turn it into ``completed``."""
    result = conn.execute(update(runs).where(runs.c.id == run_id,
                                             runs.c.status.not_in(list(finished)))
                          .values(**values))
    return bool(result.rowcount)


def mark_started(conn: Connection, run_id: int, at: Any) -> None:
    """Record when the run first started (kept across pauses and restarts)."""
    conn.execute(update(runs).where(runs.c.id == run_id, runs.c.started_at.is_(None))
                 .values(started_at=at))


def delete_run(conn: Connection, run_id: int) -> None:
    """Delete a run that holds no deliveries (a plan that was never stored)."""
    conn.execute(runs.delete().where(runs.c.id == run_id))


def control_of(conn: Connection, run_id: int) -> str | None:
    """The pending control request of the run (``pause``, ``cancel`` or None)."""
    return conn.execute(select(runs.c.control).where(runs.c.id == run_id)).scalar()


def take_lease(conn: Connection, run_id: int, pid: int, host: str, at: Any) -> None:
    """The run is dispatched by process ``pid`` on ``host`` from now on."""
    update_run(conn, run_id, owner_pid=pid, owner_host=host, heartbeat_at=at)


def beat(conn: Connection, run_id: int, pid: int, at: Any) -> None:
    """The owner ``pid`` is alive (nothing happens if another process took the run)."""
    conn.execute(update(runs).where(runs.c.id == run_id, runs.c.owner_pid == pid)
                 .values(heartbeat_at=at))


def drop_lease(conn: Connection, run_id: int, pid: int) -> None:
    """Process ``pid`` gives the run up (nothing happens if it no longer holds it)."""
    conn.execute(update(runs).where(runs.c.id == run_id, runs.c.owner_pid == pid)
                 .values(owner_pid=None, owner_host=None, heartbeat_at=None))


def planned_ids(conn: Connection, run_id: int) -> list[int]:
    """Ids of the run's rows still ``planned``."""
    return list(conn.execute(select(deliveries.c.id).where(
        deliveries.c.run_id == run_id, deliveries.c.state == S.PLANNED)).scalars())


def tune_bulk_write(conn: Connection) -> None:
    """Before a million-row plan on SQLite: keep the index pages in memory (128 MiB)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("PRAGMA cache_size=-131072")
