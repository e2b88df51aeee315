"""When the project's webhook receiver was listening, and the ``unknown`` rows to judge by it.

A send with no ``messages.sent`` event can be called "not accepted by the service" only if
the service's retried webhooks had somewhere to land: these rows record each receiver's
listening interval (started, last seen alive, stopped), written by the receiver every few
seconds (one writer: the receiver's event writer). They are read for every unknown row a
``status`` or ``resend`` judges, by ``last_seen_at``: one small table, few rows per process.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, and_, insert, or_, select, update

from scheduler.ledger.queries.tables import deliveries, events, uptime
from scheduler.ledger.rows import UnknownRow, UptimeInterval
from scheduler.ledger.states import DeliveryState as S


def open_uptime(conn: Connection, pid: int, url_key: str, now: datetime) -> int:
    """Record that a receiver started listening; returns the interval's id."""
    result = conn.execute(insert(uptime).values(pid=pid, url_key=url_key, started_at=now,
                                                last_seen_at=now).returning(uptime.c.id))
    return int(result.scalar_one())


def touch_uptime(conn: Connection, uptime_id: int, now: datetime) -> None:
    """The receiver is still listening."""
    conn.execute(update(uptime).where(uptime.c.id == uptime_id).values(last_seen_at=now))


def stop_uptime(conn: Connection, uptime_id: int, now: datetime) -> None:
    """The receiver stops listening of its own accord (a killed one never says so)."""
    conn.execute(update(uptime).where(uptime.c.id == uptime_id)
                 .values(last_seen_at=now, stopped_at=now))


def uptime_intervals(conn: Connection, since: datetime) -> list[UptimeInterval]:
    """When receivers still alive at ``since`` or later listened, oldest first."""
    rows = conn.execute(
        select(uptime.c.url_key, uptime.c.started_at, uptime.c.last_seen_at,
               uptime.c.stopped_at)
        .where(uptime.c.last_seen_at >= since)
        .order_by(uptime.c.started_at))
    return [UptimeInterval(key, start, last, stopped) for key, start, last, stopped in rows]


def unknown_rows(conn: Connection, run_id: int) -> list[UnknownRow]:
    """The run's ``unknown`` deliveries and when each was dispatched."""
    rows = conn.execute(select(deliveries.c.id, deliveries.c.dispatched_at)
                        .where(deliveries.c.run_id == run_id,
                               deliveries.c.state == str(S.UNKNOWN)))
    return [UnknownRow(i, at) for i, at in rows]


def rows_with_stray_proof(conn: Connection, run_id: int) -> set[int]:
    """The run's ``unknown`` rows to whose number, from whose sender, a ``messages.sent``
    arrived at or after their dispatch and is held by no delivery: a proof that matched
    nothing (stored, not applied, or refused by the row's kind), so the row may have been
    taken whatever the receivers' uptime says."""
    holder = deliveries.alias("holder")
    held = select(holder.c.id).where(
        holder.c.message_id_norm == events.c.message_id_norm).exists()
    stmt = (
        select(deliveries.c.id).distinct()
        .join(events, and_(events.c.number == deliveries.c.to,
                           events.c.session_id == deliveries.c.sender))
        .where(deliveries.c.run_id == run_id, deliveries.c.state == str(S.UNKNOWN),
               events.c.event == "messages.sent", events.c.message_id_norm.is_not(None),
               or_(deliveries.c.dispatched_at.is_(None),
                   events.c.received_at >= deliveries.c.dispatched_at),
               ~held)
    )
    return {int(i) for i in conn.execute(stmt).scalars()}


def unknown_facts(conn: Connection, run_id: int, now: datetime, horizon: timedelta
                  ) -> tuple[list[UnknownRow], list[UptimeInterval], set[int]]:
    """What judging a run's ``unknown`` rows reads: the rows (the claim index: as many as
    there are), the receivers' uptime since the first one's dispatch less ``horizon``, and
    the rows a stray proof makes unknowable (nothing more when there is no such row)."""
    rows = unknown_rows(conn, run_id)
    if not rows:
        return [], [], set()
    times = [row.dispatched_at for row in rows if row.dispatched_at is not None]
    since = (min(times) if times else now) - horizon
    return rows, uptime_intervals(conn, since), rows_with_stray_proof(conn, run_id)
