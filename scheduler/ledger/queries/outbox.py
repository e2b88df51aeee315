"""The outgoing webhooks' outbox (migration 0017): its tables and every statement on them.

- ``outbox_events``: one row per event, written in the transaction of the change it reports
  (:mod:`scheduler.ledger.outbox`): its stable id ``msg_…`` (the ``webhook-id`` of every try),
  type, payload (JSON) and time; ``dedupe_key`` (unique) keeps an event that several workers
  may notice (``run.stuck``) to one row; ``fanned_out_at`` is set once the event has been
  given a delivery row per subscription that takes its type.
- ``outbox_deliveries``: one row per (event, subscription): ``pending`` until ``delivered``
  or ``failed``, its tries, when the next is due, the last HTTP status and error.

A worker claims due rows with one ``UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)
RETURNING`` (PostgreSQL: workers never take the same row; SQLite: one writer at a time),
which moves their ``next_attempt_at`` past the POST's time limit: a worker killed while it
posts leaves them due again then, so each event is delivered at least once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlmodel.sql.sqltypes import UTCDateTime

#: A delivery row's states.
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"

metadata = MetaData()

outbox_events = Table(
    "outbox_events", metadata,
    Column("id", Integer, primary_key=True),
    Column("msg_id", String, nullable=False),
    Column("type", String, nullable=False),
    Column("run_id", Integer, nullable=True),
    Column("payload", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("dedupe_key", String, nullable=True),
    Column("fanned_out_at", UTCDateTime, nullable=True),
    UniqueConstraint("msg_id", name="uq_outbox_events_msg_id"),
    UniqueConstraint("dedupe_key", name="uq_outbox_events_dedupe_key"),
    Index("ix_outbox_events_unfanned", "id",
          sqlite_where=text("fanned_out_at IS NULL"),
          postgresql_where=text("fanned_out_at IS NULL")),
    # a person's recipient.* events, by their runs (person export / forget; migration 0024)
    Index("ix_outbox_events_run_type", "run_id", "type"),
)

outbox_deliveries = Table(
    "outbox_deliveries", metadata,
    Column("id", Integer, primary_key=True),
    Column("event_id", Integer, ForeignKey("outbox_events.id", ondelete="CASCADE"),
           nullable=False),
    Column("subscription", String, nullable=False),
    Column("state", String, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("last_attempt_at", UTCDateTime, nullable=True),
    Column("last_status", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("delivered_at", UTCDateTime, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("event_id", "subscription", name="uq_outbox_deliveries_event_sub"),
    Index("ix_outbox_deliveries_due", "next_attempt_at",
          sqlite_where=text("state = 'pending'"), postgresql_where=text("state = 'pending'")),
)

E, D = outbox_events.c, outbox_deliveries.c


@dataclass(frozen=True)
class Claimed:
    """A delivery row taken for one try, with what it sends."""

    id: int
    subscription: str
    attempts: int
    msg_id: str
    type: str
    payload: str
    created_at: datetime


@dataclass(frozen=True)
class DeliveryRow:
    """A delivery as ``campaign webhooks`` and the dashboard show it."""

    id: int
    subscription: str
    state: str
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    msg_id: str
    type: str
    run_id: int | None
    created_at: datetime


def add_event(conn: Connection, msg_id: str, event_type: str, payload: str, now: datetime, *,
              run_id: int | None = None, dedupe_key: str | None = None) -> bool:
    """Write one event (in the caller's transaction); False when ``dedupe_key`` is taken."""
    values = {"msg_id": msg_id, "type": event_type, "run_id": run_id, "payload": payload,
              "created_at": now, "dedupe_key": dedupe_key}
    if dedupe_key is None:
        conn.execute(insert(outbox_events).values(**values))
        return True
    if conn.execute(select(E.id).where(E.dedupe_key == dedupe_key)).first() is not None:
        return False
    # another worker's uncommitted event with the key: whichever commits first wrote it
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert  # type: ignore[assignment]
    written = conn.execute(upsert(outbox_events).values(**values)  # RETURNING: psycopg's
                           .on_conflict_do_nothing(index_elements=["dedupe_key"])  # rowcount
                           .returning(E.id)).first()  # is not 0 after DO NOTHING
    return written is not None


def has_work(conn: Connection, now: datetime, subscriptions: Collection[str]
             ) -> tuple[bool, bool]:
    """Whether events wait to be given out, and whether a delivery of ``subscriptions`` is
    due: two index reads, so that an idle loop never opens a write transaction."""
    waiting = conn.execute(select(E.id).where(E.fanned_out_at.is_(None)).limit(1)).first()
    due = bool(subscriptions) and conn.execute(
        select(D.id).where(D.state == PENDING, D.next_attempt_at <= now,
                           D.subscription.in_(list(subscriptions))).limit(1)).first()
    return waiting is not None, bool(due)


def unfanned(conn: Connection, limit: int) -> list[tuple[int, str, datetime]]:
    """``(id, type, created_at)`` of events not yet given their delivery rows, oldest first,
    locked (PostgreSQL: skipped by other workers until this transaction ends; SQLite: the
    database's write lock taken first, as a no-op UPDATE, so that a read then a write
    never meets "database is locked")."""
    if conn.dialect.name == "sqlite":
        conn.execute(update(outbox_events).where(E.id == -1).values(fanned_out_at=None))
    stmt = (select(E.id, E.type, E.created_at).where(E.fanned_out_at.is_(None))
            .order_by(E.id).limit(limit).with_for_update(skip_locked=True))
    return [(int(i), str(t), at) for i, t, at in conn.execute(stmt)]


def fan_out(conn: Connection, rows: Sequence[tuple[int, str]], event_ids: Collection[int],
            now: datetime) -> None:
    """Give the events their delivery rows (``(event id, subscription)``, due now) and mark
    every one of ``event_ids`` given out."""
    if rows:
        conn.execute(insert(outbox_deliveries), [
            {"event_id": event_id, "subscription": sub, "state": PENDING, "attempts": 0,
             "next_attempt_at": now, "created_at": now} for event_id, sub in rows])
    if event_ids:
        conn.execute(update(outbox_events).where(E.id.in_(list(event_ids)))
                     .values(fanned_out_at=now))


def claim(conn: Connection, now: datetime, until: datetime, limit: int,
          subscriptions: Collection[str]) -> list[Claimed]:
    """Take up to ``limit`` due pending rows of ``subscriptions`` for one try: their next
    try moves to ``until`` (past the POST's time limit), so no other worker takes them
    meanwhile and a killed worker's rows are due again then."""
    if not subscriptions:
        return []
    due = (select(D.id).where(D.state == PENDING, D.next_attempt_at <= now,
                              D.subscription.in_(list(subscriptions)))
           .order_by(D.next_attempt_at, D.id).limit(limit)
           .with_for_update(skip_locked=True))
    ids = [int(i) for i in conn.execute(
        update(outbox_deliveries).where(D.id.in_(due.scalar_subquery()))
        .values(next_attempt_at=until).returning(D.id)).scalars()]
    if not ids:
        return []
    stmt = (select(D.id, D.subscription, D.attempts, E.msg_id, E.type, E.payload,
                   E.created_at).join(outbox_events, E.id == D.event_id)
            .where(D.id.in_(ids)).order_by(E.id))
    return [Claimed(int(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]), str(r[5]), r[6])
            for r in conn.execute(stmt)]


def record_try(conn: Connection, delivery_id: int, now: datetime, *, status: int | None,
               error: str | None, delivered: bool, next_at: datetime | None) -> None:
    """Write one try's outcome: ``delivered``, else pending until ``next_at`` (None:
    ``failed``, the horizon passed). A row delivered already stays delivered."""
    values: dict[str, Any] = {"attempts": D.attempts + 1, "last_attempt_at": now,
                              "last_status": status, "last_error": error}
    if delivered:
        values.update(state=DELIVERED, delivered_at=now, last_error=None)
    elif next_at is None:
        values.update(state=FAILED)
    else:
        values.update(next_attempt_at=next_at)
    conn.execute(update(outbox_deliveries)
                 .where(D.id == delivery_id, D.state == PENDING).values(**values))


def retry(conn: Connection, delivery_id: int, now: datetime) -> bool:
    """A failed (or pending) delivery due again now; False when no such row."""
    result = conn.execute(update(outbox_deliveries).where(
        D.id == delivery_id, D.state.in_([FAILED, PENDING])).values(
        state=PENDING, next_attempt_at=now))
    return bool(result.rowcount)


def counts(conn: Connection, now: datetime) -> dict[tuple[str, str], int]:
    """Deliveries per (subscription, state); pending rows split into ``pending`` (never
    tried) and ``failing`` (tried, not yet delivered)."""
    out: dict[tuple[str, str], int] = {}
    stmt = (select(D.subscription, D.state, D.attempts, func.count())  # few try counts
            .group_by(D.subscription, D.state, D.attempts))
    for sub, state, attempts, n in conn.execute(stmt):
        label = "failing" if state == PENDING and attempts else str(state)
        out[(str(sub), label)] = out.get((str(sub), label), 0) + int(n)
    return out


def backlog(conn: Connection) -> tuple[int, dict[str, tuple[int, datetime | None]]]:
    """Events not given out yet, and per subscription its pending rows and the oldest's
    event time (the ``/metrics`` backlog)."""
    unfanned_n = int(conn.execute(select(func.count()).select_from(outbox_events)
                                  .where(E.fanned_out_at.is_(None))).scalar() or 0)
    stmt = (select(D.subscription, func.count(), func.min(E.created_at))
            .join(outbox_events, E.id == D.event_id).where(D.state == PENDING)
            .group_by(D.subscription))
    return unfanned_n, {str(s): (int(n), oldest) for s, n, oldest in conn.execute(stmt)}


def list_deliveries(conn: Connection, *, states: Collection[str] | None = None,
               limit: int = 50) -> list[DeliveryRow]:
    """The latest ``limit`` deliveries (of ``states``: pending, failing, delivered,
    failed), newest first."""
    stmt = (select(D.id, D.subscription, D.state, D.attempts, D.next_attempt_at,
                   D.last_attempt_at, D.last_status, D.last_error, D.delivered_at, E.msg_id,
                   E.type, E.run_id, E.created_at)
            .join(outbox_events, E.id == D.event_id).order_by(D.id.desc()).limit(limit))
    if states:
        wanted = set(states)
        conds: list[Any] = []
        if "failing" in wanted:
            conds.append((D.state == PENDING) & (D.attempts > 0))
        if PENDING in wanted:
            conds.append((D.state == PENDING) & (D.attempts == 0))
        conds += [D.state == s for s in wanted & {DELIVERED, FAILED}]
        from sqlalchemy import or_

        stmt = stmt.where(or_(*conds))
    rows = []
    for r in conn.execute(stmt):
        state = "failing" if r[2] == PENDING and int(r[3]) > 0 else str(r[2])
        rows.append(DeliveryRow(int(r[0]), str(r[1]), state, int(r[3]), r[4], r[5], r[6],
                                r[7], r[8], str(r[9]), str(r[10]),
                                None if r[11] is None else int(r[11]), r[12]))
    return rows


def prune(conn: Connection, before: datetime) -> int:
    """Delete events older than ``before`` that were given out and have no pending
    delivery (their delivery rows go with them); how many."""
    pending = select(D.event_id).where(D.state == PENDING)
    result = conn.execute(delete(outbox_events).where(
        E.created_at < before, E.fanned_out_at.is_not(None), E.id.not_in(pending)))
    return int(result.rowcount or 0)
