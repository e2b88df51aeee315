"""Stored webhook events: insert (a repeat is a no-op), mark applied, and read back.

Why hand-written here: the receiver stores and applies thousands of events per second in
group commits (figure P4), so each batch is a handful of statements keyed by the indexed
``dedupe_key`` / ``message_id_norm``. On SQLite the two per-batch writes go through the
driver as plain SQL and tuples (:func:`~scheduler.ledger.queries.common.raw`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, or_, select, update
from sqlmodel.sql.sqltypes import UTCDateTime

from scheduler.ledger.queries.common import insert_or_ignore, raw, sqlite_time
from scheduler.ledger.queries.tables import events
from scheduler.ledger.rows import StoredEvent, UnmatchedEvent


@functools.cache
def _insert_events_stmt(dialect: str) -> Any:
    return (
        insert_or_ignore(dialect, events)
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(events.c.id, events.c.dedupe_key)
    )


_EVENT_COLUMNS = ("dedupe_key", "event", "channel", "session_id", "number", "message_id_norm",
                  "occurred_at", "received_at", "payload")


@functools.cache
def _sqlite_insert_events(count: int) -> str:
    one = f"({', '.join('?' for _ in _EVENT_COLUMNS)})"
    return (f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES "
            f"{', '.join(one for _ in range(count))} "
            "ON CONFLICT (dedupe_key) DO NOTHING RETURNING id, dedupe_key")


def insert_events(conn: Connection, rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Store raw events; a ``dedupe_key`` already stored is skipped. Returns key → new id.

    Hot (every receiver batch): one multi-row ``INSERT … ON CONFLICT DO NOTHING RETURNING``
    per 500 events, so a repeat costs nothing and the new ids come back in the same trip.
    """
    if not rows:
        return {}
    if conn.dialect.name != "sqlite":
        stmt = _insert_events_stmt(conn.dialect.name)
        return {key: event_id for event_id, key in conn.execute(stmt, list(rows))}
    driver = raw(conn)
    found: dict[str, int] = {}
    for start in range(0, len(rows), 500):
        chunk = rows[start:start + 500]
        params: list[Any] = []
        for row in chunk:
            params.extend((row["dedupe_key"], row["event"], row["channel"], row["session_id"],
                           row["number"], row["message_id_norm"],
                           sqlite_time(row["occurred_at"]), sqlite_time(row["received_at"]),
                           row["payload"]))
        found.update((key, event_id) for event_id, key
                     in driver.execute(_sqlite_insert_events(len(chunk)), params).fetchall())
    return found


_MARK_APPLIED = (update(events).where(events.c.id == bindparam("b_id"))
                 .values(applied_at=bindparam("b_now", type_=UTCDateTime()),
                         result=bindparam("b_result")))


def mark_events_applied(conn: Connection, results: Sequence[tuple[int, str]],
                        now: datetime) -> None:
    """Record that events were applied, and what they did (``result``).

    Hot (every receiver batch): one ``executemany`` keyed by the primary key."""
    if not results:
        return
    if conn.dialect.name == "sqlite":
        at = sqlite_time(now)
        raw(conn).executemany("UPDATE events SET applied_at = ?, result = ? WHERE id = ?",
                               [(at, r, i) for i, r in results])
        return
    conn.execute(_MARK_APPLIED, [{"b_id": i, "b_result": r, "b_now": now} for i, r in results])


def note_event_result(conn: Connection, event_id: int, result: str) -> None:
    """Replace the ``result`` of an applied event (e.g. after a call was rejected)."""
    conn.execute(update(events).where(events.c.id == event_id).values(result=result))


def unapplied_events(conn: Connection, *, after_id: int = 0,
                     limit: int = 500) -> list[StoredEvent]:
    """Stored events never applied (a crash or an error), oldest first."""
    stmt = (select(events.c.id, events.c.payload)
            .where(events.c.applied_at.is_(None), events.c.id > after_id)
            .order_by(events.c.id).limit(limit))
    return [StoredEvent(i, p) for i, p in conn.execute(stmt)]


def recent_unmatched_events(conn: Connection, *, since_id: int,
                            names: Sequence[str]) -> list[UnmatchedEvent]:
    """Events of ``names`` after ``since_id`` that matched no delivery yet."""
    stmt = select(events.c.id, events.c.message_id_norm).where(
        events.c.id > since_id, events.c.result == "unmatched",
        events.c.message_id_norm.is_not(None), events.c.event.in_(list(names)),
    ).order_by(events.c.id)
    return [UnmatchedEvent(i, m) for i, m in conn.execute(stmt)]


def unmatched_events_for(conn: Connection, norms: Iterable[str],
                        names: Sequence[str]) -> list[StoredEvent]:
    """Events of ``names`` stored ``unmatched`` (or not applied yet) with one of these
    message ids, oldest first.

    Hot: run after every outcome transaction of the dispatcher that recorded accepted
    sends (``scheduler.tracking.matching.match_events``), usually finding nothing. On
    SQLite it goes through the driver: SQLAlchemy's compiling and parameter processing
    cost more than the indexed lookup itself (figure P2).
    """
    wanted = sorted(set(norms))
    found: list[StoredEvent] = []
    if conn.dialect.name == "sqlite" and wanted:
        kinds = list(names)
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            sql = ("SELECT id, payload FROM events WHERE message_id_norm IN "
                   f"({', '.join('?' for _ in part)}) AND event IN "
                   f"({', '.join('?' for _ in kinds)}) "
                   "AND (result = 'unmatched' OR applied_at IS NULL)")
            found.extend(StoredEvent(e, p) for e, p in raw(conn).execute(sql, [*part, *kinds]))
        return sorted(found)
    for i in range(0, len(wanted), 500):
        stmt = select(events.c.id, events.c.payload).where(
            events.c.message_id_norm.in_(wanted[i:i + 500]), events.c.event.in_(list(names)),
            or_(events.c.result == "unmatched", events.c.applied_at.is_(None)))
        found.extend(StoredEvent(e, p) for e, p in conn.execute(stmt))
    return sorted(found)


def max_event_id(conn: Connection) -> int:
    """The newest stored event's id (0 when there is none)."""
    return int(conn.execute(select(func.max(events.c.id))).scalar() or 0)


def event_payloads(conn: Connection, ids: Sequence[int]) -> list[StoredEvent]:
    """The given events, oldest first."""
    found: list[StoredEvent] = []
    for i in range(0, len(ids), 500):
        stmt = select(events.c.id, events.c.payload).where(
            events.c.id.in_(list(ids[i:i + 500])))
        found.extend(StoredEvent(e, p) for e, p in conn.execute(stmt))
    return sorted(found)


def stored_event_payloads_for(conn: Connection, message_id_norm: str,
                              names: Sequence[str]) -> list[StoredEvent]:
    """Stored events of ``names`` about one message id, oldest first."""
    stmt = select(events.c.id, events.c.payload).where(
        events.c.message_id_norm == message_id_norm, events.c.event.in_(list(names)),
    ).order_by(events.c.id)
    return [StoredEvent(i, p) for i, p in conn.execute(stmt)]
