"""The receiver's SQL: store events, apply them monotonically, replies, opt-outs."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, func, or_, select, update
from sqlmodel.sql.sqltypes import UTCDateTime

from scheduler.ledger.models import Reply
from scheduler.ledger.queries.common import (
    _state_in,
    deliveries,
    events,
    skip_pending_for_number,
    suppressions,
)
from scheduler.ledger.states import TRACKING_RANK
from scheduler.ledger.states import DeliveryState as S

# ---------------------------------------------------------------------------------------
# Tracking (webhook events). Why hand-written here: the receiver stores and applies
# thousands of events per second in group commits, so each batch is a handful of
# ``executemany`` statements keyed by the indexed ``message_id_norm`` / ``dedupe_key``.
# Every update is monotone (states only move up ``TRACKING_RANK``, timestamps keep the
# earliest evidence), so repeats, late and reordered events all give the same final row.


replies = Reply.__table__  # type: ignore[attr-defined]

#: Rows an event may still move: the tracking states (never planned, failed, skipped ...).
TRACKED_STATES: tuple[str, ...] = tuple(str(s) for s in TRACKING_RANK)


def _earliest(column: Any, param: str) -> Any:
    """``min(column, :param)`` where NULL means "not known yet" (keeps the earliest time)."""
    value = bindparam(param, type_=UTCDateTime())
    return case((or_(column.is_(None), column > value), value), else_=column)


def _moves_from(target: str) -> tuple[str, ...]:
    """Tracking states that ``target`` outranks (a delivered report also beats undelivered)."""
    rank = TRACKING_RANK[target]
    lower = [s for s, r in TRACKING_RANK.items() if r < rank]
    if target == S.DELIVERED:
        lower.append(S.UNDELIVERED)
    return tuple(str(s) for s in lower)


@functools.cache
def _insert_events_stmt(dialect: str) -> Any:
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    else:
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    return (
        dialect_insert(events)
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(events.c.id, events.c.dedupe_key)
    )


# SQLite fast path of the receiver's per-batch statements: plain SQL and tuples through the
# driver, in the caller's transaction. SQLAlchemy's per-statement cost (~0.3 ms) times the
# ~8 statements of a batch was most of the receiver's CPU per event at small batches.
_EVENT_COLUMNS = ("dedupe_key", "event", "channel", "session_id", "number", "message_id_norm",
                  "occurred_at", "received_at", "payload")


def _raw(conn: Connection) -> Any:
    """The driver connection under ``conn`` (same transaction)."""
    return conn.connection.driver_connection


def _sqlite_time(moment: datetime | None) -> str | None:
    # The text SQLAlchemy's SQLite DateTime writes (always with microseconds), fast.
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


@functools.cache
def _sqlite_insert_events(count: int) -> str:
    one = f"({', '.join('?' for _ in _EVENT_COLUMNS)})"
    return (f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES "
            f"{', '.join(one for _ in range(count))} "
            "ON CONFLICT (dedupe_key) DO NOTHING RETURNING id, dedupe_key")


def insert_events(conn: Connection, rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Store raw events; a ``dedupe_key`` already stored is skipped. Returns key → new id."""
    if not rows:
        return {}
    if conn.dialect.name != "sqlite":
        stmt = _insert_events_stmt(conn.dialect.name)
        return {key: event_id for event_id, key in conn.execute(stmt, list(rows))}
    raw = _raw(conn)
    found: dict[str, int] = {}
    for start in range(0, len(rows), 500):
        chunk = rows[start:start + 500]
        params: list[Any] = []
        for row in chunk:
            params.extend((row["dedupe_key"], row["event"], row["channel"], row["session_id"],
                           row["number"], row["message_id_norm"],
                           _sqlite_time(row["occurred_at"]), _sqlite_time(row["received_at"]),
                           row["payload"]))
        found.update((key, event_id) for event_id, key
                     in raw.execute(_sqlite_insert_events(len(chunk)), params).fetchall())
    return found


_MARK_APPLIED = (update(events).where(events.c.id == bindparam("b_id"))
                 .values(applied_at=bindparam("b_now", type_=UTCDateTime()),
                         result=bindparam("b_result")))


def mark_events_applied(conn: Connection, results: Sequence[tuple[int, str]],
                        now: datetime) -> None:
    """Record that events were applied, and what they did (``result``)."""
    if not results:
        return
    if conn.dialect.name == "sqlite":
        at = _sqlite_time(now)
        _raw(conn).executemany("UPDATE events SET applied_at = ?, result = ? WHERE id = ?",
                               [(at, r, i) for i, r in results])
        return
    conn.execute(_MARK_APPLIED, [{"b_id": i, "b_result": r, "b_now": now} for i, r in results])


def note_event_result(conn: Connection, event_id: int, result: str) -> None:
    """Replace the ``result`` of an applied event (e.g. after a call was rejected)."""
    conn.execute(update(events).where(events.c.id == event_id).values(result=result))


def unapplied_events(conn: Connection, *, after_id: int = 0,
                     limit: int = 500) -> list[tuple[int, str]]:
    """Stored events never applied (a crash or an error): (id, payload), oldest first."""
    stmt = (select(events.c.id, events.c.payload)
            .where(events.c.applied_at.is_(None), events.c.id > after_id)
            .order_by(events.c.id).limit(limit))
    return [(i, p) for i, p in conn.execute(stmt)]


def recent_unmatched_events(conn: Connection, *, since_id: int,
                            names: Sequence[str]) -> list[tuple[int, str]]:
    """Events after ``since_id`` that matched no delivery yet: (id, message id)."""
    stmt = select(events.c.id, events.c.message_id_norm).where(
        events.c.id > since_id, events.c.result == "unmatched",
        events.c.message_id_norm.is_not(None), events.c.event.in_(list(names)),
    ).order_by(events.c.id)
    return [(i, m) for i, m in conn.execute(stmt)]


def unmatched_events_for(conn: Connection, norms: Iterable[str],
                        names: Sequence[str]) -> list[tuple[int, str]]:
    """Events of ``names`` stored ``unmatched`` (or not applied yet) with one of these
    message ids: (id, payload), oldest first."""
    wanted = sorted(set(norms))
    found: list[tuple[int, str]] = []
    for i in range(0, len(wanted), 500):
        stmt = select(events.c.id, events.c.payload).where(
            events.c.message_id_norm.in_(wanted[i:i + 500]), events.c.event.in_(list(names)),
            or_(events.c.result == "unmatched", events.c.applied_at.is_(None)))
        found.extend((e, p) for e, p in conn.execute(stmt))
    return sorted(found)


def max_event_id(conn: Connection) -> int:
    """The newest stored event's id (0 when there is none)."""
    return int(conn.execute(select(func.max(events.c.id))).scalar() or 0)


def event_payloads(conn: Connection, ids: Sequence[int]) -> list[tuple[int, str]]:
    """(id, payload) of the given events, oldest first."""
    found: list[tuple[int, str]] = []
    for i in range(0, len(ids), 500):
        stmt = select(events.c.id, events.c.payload).where(
            events.c.id.in_(list(ids[i:i + 500])))
        found.extend((e, p) for e, p in conn.execute(stmt))
    return sorted(found)


_HELD = select(deliveries.c.message_id_norm).where(
    deliveries.c.message_id_norm.in_(bindparam("b_norms", expanding=True)))


def held_message_ids(conn: Connection, norms: Iterable[str]) -> set[str]:
    """Which normalised message ids some delivery holds."""
    wanted = list(set(norms))
    found: set[str] = set()
    sqlite = conn.dialect.name == "sqlite"
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        if sqlite:
            sql = ("SELECT message_id_norm FROM deliveries WHERE message_id_norm IN "
                   f"({', '.join('?' for _ in chunk)})")
            found.update(m for (m,) in _raw(conn).execute(sql, chunk).fetchall())
        else:
            found.update(conn.execute(_HELD, {"b_norms": chunk}).scalars())
    return found


@functools.cache
def _progress_stmt(target: str, stamps: tuple[str, ...]) -> Any:
    values: dict[str, Any] = {
        "state": case((_state_in(*_moves_from(target)), target), else_=deliveries.c.state),
        "updated_at": bindparam("b_now", type_=UTCDateTime()),
    }
    for column in stamps:
        values[column] = _earliest(deliveries.c[column], "b_at")
    return (update(deliveries)
            .where(deliveries.c.message_id_norm == bindparam("b_mid"),
                   _state_in(*TRACKED_STATES))
            .values(**values))


def track_progress(conn: Connection, target: str, params: Sequence[tuple[str, datetime]],
                   now: datetime, *, stamps: Sequence[str]) -> None:
    """Move deliveries holding each message id forward to ``target``; never backwards.

    ``params`` are (message id, when); each column of ``stamps`` (``sent_at``,
    ``delivered_at``, ``read_at``) keeps the earliest time any event gave it.
    """
    if not params:
        return
    if conn.dialect.name == "sqlite":
        at_now = _sqlite_time(now)
        _raw(conn).executemany(_sqlite_progress(str(target), tuple(stamps)),
                               [(_sqlite_time(at), at_now, m) for m, at in params])
        return
    conn.execute(_progress_stmt(str(target), tuple(stamps)),
                 [{"b_mid": m, "b_at": at, "b_now": now} for m, at in params])


@functools.cache
def _sqlite_progress(target: str, stamps: tuple[str, ...]) -> str:
    """The SQLite text of :func:`_progress_stmt` (params: ``at``, ``now``, message id)."""
    def listed(states: Sequence[str]) -> str:
        return ", ".join(f"'{s}'" for s in states)

    sets = [f"state = CASE WHEN state IN ({listed(_moves_from(target))}) THEN '{target}' "
            "ELSE state END", "updated_at = ?2"]
    sets += [f"{c} = CASE WHEN {c} IS NULL OR {c} > ?1 THEN ?1 ELSE {c} END" for c in stamps]
    return (f"UPDATE deliveries SET {', '.join(sets)} WHERE message_id_norm = ?3 "
            f"AND state IN ({listed(TRACKED_STATES)})")


def ambiguous_row_for(conn: Connection, number: str, sender: str | None,
                      latest_dispatch: datetime, *, kinds: Sequence[str] = (),
                      strict_kinds: Sequence[str] = ()) -> int | None:
    """The oldest row to ``number`` from ``sender`` that a ``messages.sent`` could prove sent.

    Candidates: ``dispatching`` / ``unknown`` rows, and ``accepted`` rows whose answer had
    no message id, dispatched no later than ``latest_dispatch`` (the event time + skew).
    A row whose kind is in ``strict_kinds`` must also be one of ``kinds`` (an album's image
    never proves a text sent).
    """
    conds = [
        deliveries.c.to == number,
        or_(_state_in(S.DISPATCHING, S.UNKNOWN),
            and_(deliveries.c.state == S.ACCEPTED, deliveries.c.message_id.is_(None))),
        or_(deliveries.c.dispatched_at.is_(None), deliveries.c.dispatched_at <= latest_dispatch),
    ]
    if sender is not None:
        conds.append(deliveries.c.sender == sender)
    if strict_kinds:
        conds.append(or_(deliveries.c.kind.in_(list(kinds)),
                         deliveries.c.kind.not_in(list(strict_kinds))))
    stmt = (select(deliveries.c.id).where(*conds)
            .order_by(deliveries.c.dispatched_at, deliveries.c.id).limit(1))
    return conn.execute(stmt).scalar()


def mark_proven_sent(conn: Connection, delivery_id: int, message_id_norm: str,
                     at: datetime, now: datetime) -> bool:
    """A row proven sent by a ``messages.sent`` no delivery held: ``sent``, with that id."""
    result = conn.execute(
        update(deliveries)
        .where(deliveries.c.id == delivery_id,
               or_(_state_in(S.DISPATCHING, S.UNKNOWN),
                   and_(deliveries.c.state == S.ACCEPTED, deliveries.c.message_id.is_(None))))
        .values(state=S.SENT, message_id=message_id_norm, message_id_norm=message_id_norm,
                sent_at=at, due_at=None, updated_at=now)
    )
    return bool(result.rowcount)


def stored_event_payloads_for(conn: Connection, message_id_norm: str,
                              names: Sequence[str]) -> list[tuple[int, str]]:
    """Stored events of ``names`` about one message id: (id, payload), oldest first."""
    stmt = select(events.c.id, events.c.payload).where(
        events.c.message_id_norm == message_id_norm, events.c.event.in_(list(names)),
    ).order_by(events.c.id)
    return [(i, p) for i, p in conn.execute(stmt)]


def latest_delivery_to(conn: Connection, number: str, session_id: str | None,
                       before: datetime) -> tuple[int, int] | None:
    """(delivery id, run id) of the last message dispatched to ``number`` up to ``before``.

    A delivery from ``session_id`` is preferred (the reply went to that session); without
    one dispatched by then, the latest dispatched at all.
    """
    base = [deliveries.c.to == number, deliveries.c.dispatched_at.is_not(None)]
    order = (deliveries.c.dispatched_at.desc(), deliveries.c.id.desc())
    attempts = []
    if session_id is not None:
        attempts.append([*base, deliveries.c.sender == session_id,
                         deliveries.c.dispatched_at <= before])
    attempts += [[*base, deliveries.c.dispatched_at <= before], base]
    for conds in attempts:
        row = conn.execute(select(deliveries.c.id, deliveries.c.run_id).where(*conds)
                           .order_by(*order).limit(1)).first()
        if row is not None:
            return int(row[0]), int(row[1])
    return None


def record_reply(conn: Connection, reply: dict[str, Any], now: datetime) -> None:
    """Store a reply and mark its delivery replied (the earliest reply's text is kept)."""
    conn.execute(replies.insert().values(**reply))
    delivery_id = reply.get("delivery_id")
    if delivery_id is None:
        return
    at = reply["received_at"]
    first = or_(deliveries.c.replied_at.is_(None),
                deliveries.c.replied_at > bindparam("b_at", type_=UTCDateTime()))
    conn.execute(
        update(deliveries).where(deliveries.c.id == bindparam("b_id"))
        .values(replied_at=_earliest(deliveries.c.replied_at, "b_at"),
                reply_text=case((first, bindparam("b_text")), else_=deliveries.c.reply_text),
                updated_at=bindparam("b_now")),
        {"b_id": delivery_id, "b_at": at, "b_text": reply.get("text"), "b_now": now},
    )


def add_suppression(conn: Connection, number: str, *, source: str, reason: str | None,
                    now: datetime) -> bool:
    """``Ledger.suppress`` inside the caller's transaction: list it, skip its pending rows.

    Returns False when the number was already listed.
    """
    exists = conn.execute(select(suppressions.c.number).where(
        suppressions.c.number == number)).first()
    if exists is None:
        conn.execute(suppressions.insert().values(
            number=number, source=source, reason=reason, created_at=now))
    skip_pending_for_number(conn, number, "opted_out", now)
    return exists is None
