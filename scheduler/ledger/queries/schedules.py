"""Schedules and fires: the campaigns ``serve`` triggers, and each time one was due.

A fire is unique on (campaign, fire time): two trigger processes, or a restart, record it
once. APScheduler keeps its own jobs in the same database (``apscheduler_jobs``, through
its SQLAlchemy job store, made here so that nothing outside the ledger opens the engine).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, column, delete, inspect, select, table, update

from scheduler.ledger.queries.common import insert_or_ignore
from scheduler.ledger.queries.tables import fires, schedules
from scheduler.ledger.rows import DueFire, ScheduleRow

#: APScheduler's job table (its ids are the campaign names).
_JOBS = table("apscheduler_jobs", column("id"))


def job_store(engine: Engine) -> Any:
    """APScheduler's job store in the ledger's database."""
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

    return SQLAlchemyJobStore(engine=engine)


def put_schedule(conn: Connection, name: str, definition_path: str, trigger: str,
                 timezone: str, now: datetime) -> None:
    """Register (or replace) campaign ``name``'s schedule."""
    found = conn.execute(select(schedules.c.name).where(schedules.c.name == name)).first()
    if found is None:
        conn.execute(schedules.insert().values(name=name, definition_path=definition_path,
                                               trigger=trigger, timezone=timezone,
                                               created_at=now))
    else:
        conn.execute(update(schedules).where(schedules.c.name == name).values(
            definition_path=definition_path, trigger=trigger, timezone=timezone))


def delete_schedule(conn: Connection, name: str) -> bool:
    """Forget a schedule and its APScheduler job; False when there was none."""
    gone = conn.execute(delete(schedules).where(schedules.c.name == name)).rowcount
    if not gone:
        return False
    if inspect(conn).has_table("apscheduler_jobs"):
        conn.execute(delete(_JOBS).where(_JOBS.c.id == name))
    return True


def all_schedules(conn: Connection) -> list[ScheduleRow]:
    """Every registered schedule, by name."""
    rows = conn.execute(select(schedules.c.name, schedules.c.definition_path,
                               schedules.c.trigger, schedules.c.timezone)
                        .order_by(schedules.c.name))
    return [ScheduleRow(*r) for r in rows]


def fired_campaigns(conn: Connection) -> set[str]:
    """Names of the campaigns that have fired at least once."""
    return set(conn.execute(select(fires.c.campaign_name).distinct()).scalars())


def record_fire(conn: Connection, name: str, fire_time: datetime, *, recorded_at: datetime,
                status: str = "due", reason: str | None = None) -> bool:
    """Record that schedule ``name`` was due at ``fire_time``; False when the schedule is
    unknown or this fire was already recorded (by another trigger process, or before a
    restart): ``INSERT … ON CONFLICT DO NOTHING`` on the unique (campaign, fire time)."""
    path = conn.execute(select(schedules.c.definition_path)
                        .where(schedules.c.name == name)).scalar()
    if path is None:
        return False
    stmt = insert_or_ignore(conn.dialect.name, fires).values(
        campaign_name=name, definition_path=path, fire_time=fire_time,
        recorded_at=recorded_at, status=status, reason=reason)
    # RETURNING tells whether a row went in (rowcount is -1 with PostgreSQL's RETURNING)
    return conn.execute(stmt.on_conflict_do_nothing().returning(fires.c.id)).first() is not None


def due_fires(conn: Connection) -> list[DueFire]:
    """Fires recorded ``due`` that no run was made from yet, oldest first."""
    rows = conn.execute(select(fires.c.id, fires.c.campaign_name, fires.c.definition_path,
                               fires.c.fire_time)
                        .where(fires.c.status == "due").order_by(fires.c.id))
    return [DueFire(*r) for r in rows]


def settle_fire(conn: Connection, fire_id: int, status: str, run_id: int | None,
                reason: str | None) -> None:
    """A due fire became a run (``started``), or ``missed`` / ``failed`` with a reason."""
    conn.execute(update(fires).where(fires.c.id == fire_id, fires.c.status == "due")
                 .values(status=status, run_id=run_id, reason=reason))


def unplanned_fires(conn: Connection, limit: int = 20) -> list[tuple[DueFire, str, str]]:
    """Fires that made no run (``missed``, or ``failed`` before a run existed: a campaign
    file that does not load), newest first, with their status and reason: ``campaign runs``
    shows them beside the runs, so a scheduled campaign that never ran is not invisible."""
    rows = conn.execute(select(fires.c.id, fires.c.campaign_name, fires.c.definition_path,
                               fires.c.fire_time, fires.c.status, fires.c.reason)
                        .where(fires.c.status.in_(("missed", "failed")),
                               fires.c.run_id.is_(None))
                        .order_by(fires.c.fire_time.desc(), fires.c.id.desc()).limit(limit))
    return [(DueFire(*r[:4]), r[4], r[5] or "") for r in rows]
