"""Workers and sender leases: who is alive, who may send through which sender, until when.

Several ``campaign serve`` workers share one PostgreSQL ledger. Each registers in
``workers`` and writes a heartbeat; each sender (a session, or the SMS/voice account) is
leased to one worker at a time in ``sender_leases``. Every operation is ONE conditional
statement, so two workers racing for a sender can never both win:

- acquire: ``INSERT ... ON CONFLICT (sender) DO UPDATE ... WHERE worker IS NULL OR
  expires_at <= now`` (a free, released or expired lease only; ``epoch`` + 1);
- renew: ``UPDATE ... WHERE worker = me AND expires_at > now RETURNING sender`` for every
  sender the worker holds at once (a lapsed lease is not renewed: it may be someone's now);
- fence: the same ``UPDATE`` on the senders of a claim, inside the claim's transaction: it
  locks their lease rows until the claim commits (a taker's acquire waits for it) and
  answers the senders still held, so rows are only claimed for a sender the worker holds;
- release: ``UPDATE ... SET worker = NULL WHERE worker = me``.

None of these is hot except the fence (once per claim transaction, one statement for all
its senders, keyed by the primary key).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, or_, select, text, update

from scheduler.ledger.queries.common import dialect_insert
from scheduler.ledger.queries.tables import deliveries, sender_leases, workers
from scheduler.ledger.rows import LeaseRow, WorkerRow
from scheduler.ledger.states import DeliveryState as S

L = sender_leases


def register_worker(conn: Connection, worker_id: str, host: str, pid: int,
                    now: datetime, target: str | None = None) -> None:
    """A new worker: its row, alive from ``now``, sending to ``target``."""
    conn.execute(workers.insert().values(id=worker_id, host=host, pid=pid, started_at=now,
                                         heartbeat_at=now, target=target))


def beat_worker(conn: Connection, worker_id: str, now: datetime, wants: int = 0) -> None:
    """The worker is alive, its dispatchers ready to send through ``wants`` senders."""
    conn.execute(update(workers).where(workers.c.id == worker_id)
                 .values(heartbeat_at=now, wants=wants))


def stop_worker(conn: Connection, worker_id: str, now: datetime) -> None:
    """The worker stops cleanly: it is no longer live and gives up every lease it held."""
    conn.execute(update(workers).where(workers.c.id == worker_id).values(stopped_at=now))
    conn.execute(update(L).where(L.c.worker == worker_id).values(worker=None, expires_at=now))


def live_workers(conn: Connection, since: datetime) -> list[WorkerRow]:
    """Workers not stopped whose heartbeat is not older than ``since``, by id."""
    rows = conn.execute(select(workers.c.id, workers.c.host, workers.c.pid,
                               workers.c.started_at, workers.c.heartbeat_at,
                               workers.c.stopped_at, workers.c.wants, workers.c.target)
                        .where(workers.c.stopped_at.is_(None), workers.c.heartbeat_at >= since)
                        .order_by(workers.c.id))
    return [WorkerRow(*r) for r in rows]


def all_leases(conn: Connection) -> list[LeaseRow]:
    """Every lease row, by sender."""
    rows = conn.execute(select(L.c.sender, L.c.worker, L.c.expires_at, L.c.epoch,
                               L.c.last_sent_at).order_by(L.c.sender))
    return [LeaseRow(*r) for r in rows]


def acquire(conn: Connection, sender: str, worker_id: str, now: datetime,
            until: datetime) -> LeaseRow | None:
    """Take ``sender`` for ``worker_id`` until ``until`` if nobody holds it (free, released
    or expired); None when another worker holds it (or this one still does).

    One ``INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING``: the conflicting row is
    locked while it is judged, so of two workers racing for a sender exactly one wins.
    """
    stmt: Any = dialect_insert(conn.dialect.name)(L).values(
        sender=sender, worker=worker_id, expires_at=until, epoch=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=[L.c.sender],
        set_={"worker": worker_id, "expires_at": until, "epoch": L.c.epoch + 1},
        where=or_(L.c.worker.is_(None), L.c.expires_at <= now),
    ).returning(L.c.sender, L.c.worker, L.c.expires_at, L.c.epoch, L.c.last_sent_at)
    row = conn.execute(stmt).first()
    return LeaseRow(*row) if row is not None else None


def renew(conn: Connection, worker_id: str, now: datetime, until: datetime) -> set[str]:
    """Extend every unexpired lease of ``worker_id`` to ``until``; the senders renewed (one
    ``UPDATE ... RETURNING`` over ``ix_sender_leases_worker``)."""
    stmt = (update(L).where(L.c.worker == worker_id, L.c.expires_at > now)
            .values(expires_at=until).returning(L.c.sender))
    return set(conn.execute(stmt).scalars())


def fence(conn: Connection, worker_id: str, senders: Collection[str], now: datetime) -> set[str]:
    """In a claim's transaction: which of ``senders`` the worker still holds (the others'
    rows must not be claimed); their lease rows stay locked until the claim commits and
    record ``now`` as the sender's latest claim (the next holder keeps the pace from it).

    Hot (once per claim transaction): one ``UPDATE ... WHERE sender IN (...) RETURNING``
    by primary key.
    """
    if not senders:
        return set()
    stmt = (update(L).where(L.c.sender.in_(list(senders)), L.c.worker == worker_id,
                            L.c.expires_at > now)
            .values(last_sent_at=now).returning(L.c.sender))
    return set(conn.execute(stmt).scalars())


def release(conn: Connection, worker_id: str, senders: Collection[str], now: datetime) -> None:
    """Give ``senders`` up (only those ``worker_id`` still holds)."""
    if senders:
        conn.execute(update(L).where(L.c.sender.in_(list(senders)), L.c.worker == worker_id)
                     .values(worker=None, expires_at=now))


#: PostgreSQL: claim in ONE statement. The inner SELECT locks the rows still ``planned``
#: and skips those another worker's claim is locking (``FOR UPDATE SKIP LOCKED``: no
#: worker ever waits for another's claim, and no row is handed to two); the UPDATE moves
#: them to ``dispatching`` with their sender and the claiming worker. ``unnest`` pairs each
#: id with its sender, so the whole batch is one round trip.
_CLAIM_PG = text(
    "UPDATE deliveries AS d SET state = 'dispatching', dispatched_at = :now, due_at = NULL, "
    "attempts = d.attempts + 1, updated_at = :now, sender = v.sender, worker = :worker "
    "FROM unnest(CAST(:ids AS integer[]), CAST(:senders AS text[])) AS v(id, sender) "
    "WHERE d.id = v.id AND d.state = 'planned' AND d.id IN ("
    "SELECT id FROM deliveries WHERE id = ANY(CAST(:ids AS integer[])) "
    "AND state = 'planned' FOR UPDATE SKIP LOCKED) RETURNING d.id")


def claim_skip_locked(conn: Connection, claims: Sequence[tuple[int, str]], now: datetime,
                      worker_id: str | None) -> set[int]:
    """PostgreSQL: mark rows ``dispatching`` with their sender (and worker); the ids that
    moved (see :data:`_CLAIM_PG`). Committed by the caller before the HTTP call."""
    if not claims:
        return set()
    params = {"ids": [i for i, _s in claims], "senders": [s for _i, s in claims],
              "now": now, "worker": worker_id}
    return set(conn.execute(_CLAIM_PG, params).scalars())


def rows_to_take_over(conn: Connection, run_ids: Collection[int], sender: str,
                      worker_id: str) -> list[tuple[int, int]]:
    """(run, delivery) of the rows of ``run_ids`` that another worker (or a single process)
    left ``dispatching`` on ``sender`` and is not verifying: the new holder settles them
    (once per takeover; ``ix_deliveries_claim`` narrows it to the runs' dispatching rows)."""
    if not run_ids:
        return []
    rows = conn.execute(select(deliveries.c.run_id, deliveries.c.id).where(
        deliveries.c.run_id.in_(list(run_ids)), deliveries.c.sender == sender,
        deliveries.c.state == S.DISPATCHING, deliveries.c.due_at.is_(None),
        or_(deliveries.c.worker.is_(None), deliveries.c.worker != worker_id)))
    return [(r, i) for r, i in rows]


def orphaned_rows(conn: Connection, run_id: int, live_ids: Collection[str], *,
                  unowned: bool) -> set[int]:
    """Ids of the run's rows left ``dispatching`` (not being verified) by a worker that is
    no longer live, and with ``unowned`` by no worker (a single process that died): rows
    no lease takeover will reach when no live worker wants their sender for this run.
    Once per dispatcher start, over ``ix_deliveries_claim`` (run, state)."""
    who: Any = deliveries.c.worker.not_in(list(live_ids))
    if unowned:
        who = or_(deliveries.c.worker.is_(None), who)
    rows = conn.execute(select(deliveries.c.id).where(
        deliveries.c.run_id == run_id, deliveries.c.state == S.DISPATCHING,
        deliveries.c.due_at.is_(None), who))
    return set(rows.scalars())
