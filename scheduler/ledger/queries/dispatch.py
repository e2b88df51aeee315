"""The dispatcher's SQL: due rows, claim, outcomes, steps, counts.

The hot path (figure P2): per loop turn, one read of due rows, one claim transaction (two
statements), and one outcome transaction of a handful of ``executemany`` statements for
the whole batch; each statement's docstring says why it has its shape. Rows a crash or a
time-out left in doubt are settled by :mod:`scheduler.ledger.queries.ambiguous`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, func, null, or_, select, update

from scheduler.ledger.queries import tallies
from scheduler.ledger.queries.common import lock_matching, raw, sqlite_time, state_in
from scheduler.ledger.queries.leases import claim_skip_locked
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.rows import AmbiguousRow, DueDelivery
from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S


def due_deliveries(
    conn: Connection, run_id: int, now: datetime, *, limit: int, after_seq: int = -1,
    senders: Collection[str] | None = None, part: tuple[int, int] | None = None,
) -> list[DueDelivery]:
    """Planned rows of ``run_id`` whose time has come, in plan order, after ``after_seq``.

    Hot (every refill, 512 rows): served by ``ix_deliveries_claim`` (run_id, state, seq),
    and the ``seq`` cursor keeps each read from scanning the rows already taken. A worker
    (PostgreSQL) reads only rows free of a sender or pinned to one of its ``senders``, and
    with ``part`` = (n, k) only rows whose ``seq % n == k`` (workers read apart).
    """
    stmt = (
        select(
            deliveries.c.id, deliveries.c.seq, deliveries.c.step, deliveries.c.to,
            deliveries.c.path, deliveries.c.payload, deliveries.c.sender,
            deliveries.c.region, deliveries.c.attempts,
        )
        .where(
            deliveries.c.run_id == run_id,
            deliveries.c.state == S.PLANNED,
            deliveries.c.seq > after_seq,
            deliveries.c.due_at.is_not(None),
            deliveries.c.due_at <= now,
        )
        .order_by(deliveries.c.seq)
        .limit(limit)
    )
    if senders is not None:
        stmt = stmt.where(or_(deliveries.c.sender.is_(None),
                              deliveries.c.sender.in_(list(senders))))
    if part is not None and part[0] > 1:
        stmt = stmt.where(deliveries.c.seq % part[0] == part[1])
    return [DueDelivery(*r) for r in conn.execute(stmt)]


def next_due_time(conn: Connection, run_id: int) -> datetime | None:
    """The earliest ``due_at`` of the run's planned rows (None when nothing is waiting)."""
    stmt = select(func.min(deliveries.c.due_at)).where(
        deliveries.c.run_id == run_id, deliveries.c.state == S.PLANNED
    )
    return conn.execute(stmt).scalar()


def claim(conn: Connection, claims: Sequence[tuple[int, str]], now: datetime) -> set[int]:
    """Mark rows ``dispatching`` with their sender; returns the ids that really moved.

    Only rows still ``planned`` move: a row the dispatcher read ahead may have been skipped
    meanwhile (its number opted out, the run was cancelled), and must then not be sent.
    One statement whatever the number of senders (a statement per sender cost ~0.4 ms of
    CPU per delivery with 100 senders); on PostgreSQL it skips rows another worker's claim
    is locking (``FOR UPDATE SKIP LOCKED``, :func:`~scheduler.ledger.queries.leases.
    claim_skip_locked`), so several workers never wait for each other nor share a row.
    The caller commits this *before* the HTTP call: after a crash, a ``dispatching`` row
    means "maybe sent" and is reconciled from events, never blindly re-sent.
    """
    if not claims:
        return set()
    if conn.dialect.name == "sqlite":
        return _claim_sqlite(conn, claims, now)
    return claim_skip_locked(conn, claims, now, worker_id=None)


def _claim_sqlite(conn: Connection, claims: Sequence[tuple[int, str]], now: datetime
                  ) -> set[int]:
    """SQLite: ONE statement for the whole claim, through the driver.

    ``UPDATE ... FROM (VALUES (id, sender), ...)`` moves the rows still ``planned``, sets
    each one's sender and answers the ids that moved. Plain tuples through sqlite3 skip
    SQLAlchemy's per-parameter-set processing, which cost more than the statement itself
    at 64 rows (figure P2).
    """
    values = ", ".join("(?, ?)" for _ in claims)
    # The statement must START with UPDATE (no WITH): Python's sqlite3 opens its implicit
    # transaction only before a statement it recognises as a write, and this one must be
    # part of the caller's transaction. VALUES columns are column1, column2.
    sql = ("UPDATE deliveries SET state = 'dispatching', dispatched_at = ?, due_at = NULL, "
           "attempts = attempts + 1, updated_at = ?, sender = v.column2 "
           f"FROM (VALUES {values}) AS v WHERE deliveries.id = v.column1 "
           "AND deliveries.state = 'planned' RETURNING deliveries.id")
    at = sqlite_time(now)
    params: list[object] = [at, at]
    params += [x for pair in claims for x in pair]
    return {row[0] for row in raw(conn).execute(sql, params).fetchall()}


#: SQLite: every accepted row of a batch in ONE statement (see :func:`record_accepted`).
#: It starts with UPDATE so that sqlite3 opens the caller's transaction (see the claim);
#: v.column1..4 are (id, messageId, its lower case, accepted at). Every CASE reads the
#: row's old values: rows still in doubt become ``accepted``; a row an early event already
#: proved ``sent`` only gets what it lacks.
_IN_DOUBT = "state IN ('dispatching', 'unknown')"
_ACCEPT_SQLITE = (
    "UPDATE deliveries SET "
    f"state = CASE WHEN {_IN_DOUBT} THEN 'accepted' ELSE state END, "
    f"message_id = CASE WHEN {_IN_DOUBT} THEN v.column2 "
    "ELSE coalesce(message_id, v.column2) END, "
    f"message_id_norm = CASE WHEN {_IN_DOUBT} THEN v.column3 "
    "ELSE coalesce(message_id_norm, v.column3) END, "
    f"accepted_at = CASE WHEN {_IN_DOUBT} THEN v.column4 "
    "ELSE coalesce(accepted_at, v.column4) END, "
    f"last_error = CASE WHEN {_IN_DOUBT} THEN NULL ELSE last_error END, "
    f"updated_at = CASE WHEN {_IN_DOUBT} THEN v.column4 ELSE updated_at END "
    "FROM (VALUES {values}) AS v WHERE deliveries.id = v.column1 "
    "AND (deliveries.state IN ('dispatching', 'unknown') "
    "OR deliveries.message_id IS NULL OR deliveries.accepted_at IS NULL)"
)


def record_accepted(
    conn: Connection, accepted: Sequence[tuple[int, str | None]], now: datetime
) -> None:
    """Rows the service took: store ``messageId`` and move ``dispatching`` → ``accepted``.

    Hot (every flush): on SQLite ONE statement for the whole batch (``UPDATE ... FROM
    (VALUES ...)``, through the driver); elsewhere two ``executemany`` statements. Either
    way each row is guarded by its state or its missing columns, so a repeat changes
    nothing.

    Must be the first statement of its transaction: it takes the matching lock
    (:func:`~scheduler.ledger.queries.common.lock_matching`), so that an event stored by
    the receiver meanwhile is either seen by the match that follows the commit
    (:func:`scheduler.tracking.matching.match_events`), or sees the message ids stored
    here.
    A ``messages.sent`` event may already have proved the row sent (it is then ``sent``
    with that event's id): only what is missing is filled in, ``accepted_at`` included.
    """
    if not accepted:
        return
    lock_matching(conn)
    if conn.dialect.name == "sqlite":
        # one UPDATE for the whole batch: the two rules below as CASEs over the old values
        at = sqlite_time(now)
        values = ", ".join("(?, ?, ?, ?)" for _ in accepted)
        flat = [x for i, m in accepted for x in (i, m, m.lower() if m else None, at)]
        raw(conn).execute(_ACCEPT_SQLITE.format(values=values), flat)
        return
    params = [
        {"b_id": i, "b_mid": m, "b_norm": m.lower() if m else None, "b_now": now}
        for i, m in accepted
    ]
    conn.execute(
        update(deliveries)
        .where(deliveries.c.id == bindparam("b_id"),
               state_in(S.DISPATCHING, S.UNKNOWN))
        .values(state=S.ACCEPTED, message_id=bindparam("b_mid"),
                message_id_norm=bindparam("b_norm"), accepted_at=bindparam("b_now"),
                last_error=None, updated_at=bindparam("b_now")),
        params,
    )
    conn.execute(
        update(deliveries)
        .where(deliveries.c.id == bindparam("b_id"),
               or_(deliveries.c.message_id.is_(None), deliveries.c.accepted_at.is_(None)))
        .values(message_id=func.coalesce(deliveries.c.message_id, bindparam("b_mid")),
                message_id_norm=func.coalesce(deliveries.c.message_id_norm,
                                              bindparam("b_norm")),
                accepted_at=func.coalesce(deliveries.c.accepted_at, bindparam("b_now"))),
        params,
    )


def record_retry(
    conn: Connection, retries: Sequence[tuple[int, datetime, str]], now: datetime
) -> None:
    """Rows to try again later: back to ``planned`` with a new ``due_at`` and the error.

    A first step is free of its sender again (any sender, on any worker, may send it: a
    row refused with a 429 must not wait for the sender that refused it); a later step
    keeps its recipient's sender (one conversation). One ``executemany``;
    ``state = 'dispatching'`` keeps a late call from undoing a settled row."""
    if not retries:
        return
    conn.execute(
        update(deliveries)
        .where(deliveries.c.id == bindparam("b_id"), deliveries.c.state == S.DISPATCHING)
        .values(state=S.PLANNED, due_at=bindparam("b_due"), last_error=bindparam("b_err"),
                updated_at=bindparam("b_now"),
                sender=case((deliveries.c.step == 0, null()), else_=deliveries.c.sender)),
        [{"b_id": i, "b_due": d, "b_err": e, "b_now": now} for i, d, e in retries],
    )


def record_final(
    conn: Connection, rows: Sequence[tuple[int, str, str | None]], state: str, now: datetime,
    *, from_states: Sequence[str] = (S.DISPATCHING,),
) -> None:
    """Move rows to a final ``state`` (failed, expired, skipped, unknown) with a reason.

    One ``executemany``; only rows still in ``from_states`` move (never backwards)."""
    if not rows:
        return
    values: dict[str, Any] = {"state": state, "updated_at": bindparam("b_now")}
    if state == S.FAILED:
        values.update(last_error=bindparam("b_why"), failed_at=bindparam("b_now"))
    else:
        values["reason"] = bindparam("b_why")
    conn.execute(
        update(deliveries)
        .where(deliveries.c.id == bindparam("b_id"), state_in(*from_states))
        .values(**values),
        [{"b_id": i, "b_why": why, "b_now": now} for i, _s, why in rows],
    )


def release_next_steps(
    conn: Connection, run_id: int, released: Sequence[tuple[str, int, str | None]],
    delays_s: Sequence[float], now: datetime,
) -> None:
    """After step *k* of a recipient was accepted, make step *k+1* due (same sender).

    A one-step run has no next step: nothing is written (no statement at all).

    Hot (every flush): one ``executemany`` keyed by (run, to, step), served by
    ``ix_deliveries_to``; ``due_at IS NULL`` keeps a repeat from moving a row twice, and
    ``gate IS NULL`` a step that waits for its condition from going (its decision releases
    it, see :mod:`scheduler.ledger.queries.conversation`).
    """
    if len(delays_s) <= 1:
        return
    params = []
    for to, step, sender in released:
        nxt = step + 1
        delay = delays_s[nxt] if nxt < len(delays_s) else 0.0
        params.append({"b_to": to, "b_step": nxt, "b_sender": sender,
                       "b_due": now + timedelta(seconds=delay)})
    if not params:
        return
    conn.execute(
        update(deliveries)
        .where(deliveries.c.run_id == run_id, deliveries.c.to == bindparam("b_to"),
               deliveries.c.step == bindparam("b_step"), deliveries.c.state == S.PLANNED,
               deliveries.c.due_at.is_(None), deliveries.c.gate.is_(None))
        .values(due_at=bindparam("b_due"), sender=bindparam("b_sender")),
        params,
    )


def counts_by_state(conn: Connection, run_id: int) -> dict[str, int]:
    """Number of deliveries of the run in each state (states with none left out), from the
    run's trigger-kept tallies: no scan of the run's rows (see :mod:`.tallies`)."""
    return tallies.state_counts(conn, run_id)


def pending_count(conn: Connection, run_id: int) -> int:
    """Rows of the run the dispatcher still has to deal with (planned or dispatching)."""
    stmt = select(func.count()).where(
        deliveries.c.run_id == run_id,
        deliveries.c.state.in_([S.PLANNED, S.DISPATCHING]),
    )
    return int(conn.execute(stmt).scalar() or 0)


def sent_today_by_sender(conn: Connection, since: datetime,
                         senders: Collection[str] | None = None) -> dict[str, int]:
    """Sends per sender since ``since`` (the start of the local day), across all runs
    (once per dispatch, and for the senders a worker takes over, for the daily caps: a
    ``GROUP BY``, not a row per send); only ``senders`` when given."""
    stmt = (
        select(deliveries.c.sender, func.count())
        .where(deliveries.c.sender.is_not(None), deliveries.c.dispatched_at >= since,
               deliveries.c.state.not_in([S.PLANNED]))
        .group_by(deliveries.c.sender)
    )
    if senders is not None:
        stmt = stmt.where(deliveries.c.sender.in_(list(senders)))
    return {sender: n for sender, n in conn.execute(stmt)}



#: The columns of an :class:`AmbiguousRow`, in its order.
AMBIGUOUS_COLUMNS = (deliveries.c.id, deliveries.c.to, deliveries.c.step, deliveries.c.sender,
                     deliveries.c.dispatched_at, deliveries.c.due_at)


def dispatching_rows(conn: Connection, run_id: int) -> list[AmbiguousRow]:
    """Rows of the run left ``dispatching`` (in flight at a crash, or being verified after a
    time-out), in plan order."""
    stmt = select(*AMBIGUOUS_COLUMNS).where(
        deliveries.c.run_id == run_id, deliveries.c.state == S.DISPATCHING,
    ).order_by(deliveries.c.seq)
    return [AmbiguousRow(*r) for r in conn.execute(stmt)]


def defer(conn: Connection, rows: Sequence[tuple[int, datetime]]) -> None:
    """Planned rows that may not go yet (the recipient's window is closed): new ``due_at``
    (one ``executemany``; only rows still ``planned``)."""
    if rows:
        conn.execute(
            update(deliveries)
            .where(deliveries.c.id == bindparam("b_id"), deliveries.c.state == S.PLANNED)
            .values(due_at=bindparam("b_due")),
            [{"b_id": i, "b_due": d} for i, d in rows],
        )


def mark_verifying(conn: Connection, rows: Sequence[tuple[int, datetime, str]],
                   now: datetime) -> None:
    """A send that timed out stays ``dispatching`` with ``due_at`` = end of its grace.

    ``dispatching`` with a ``due_at`` means "maybe sent, waiting for ``messages.sent``";
    ``reconcile.settle_verifying`` decides it when the grace ends.
    """
    if rows:
        conn.execute(
            update(deliveries)
            .where(deliveries.c.id == bindparam("b_id"), deliveries.c.state == S.DISPATCHING)
            .values(due_at=bindparam("b_due"), last_error=bindparam("b_err"),
                    updated_at=bindparam("b_now")),
            [{"b_id": i, "b_due": d, "b_err": e, "b_now": now} for i, d, e in rows],
        )


def expire_pending(conn: Connection, run_id: int, now: datetime) -> int:
    """The run's latest send time has passed: every planned row becomes ``expired``."""
    result = conn.execute(
        update(deliveries)
        .where(deliveries.c.run_id == run_id, deliveries.c.state == S.PLANNED)
        .values(state=S.EXPIRED, reason="past the latest send time", updated_at=now)
    )
    return result.rowcount or 0


def repair_waiting_steps(conn: Connection, run_id: int, now: datetime) -> int:
    """Later steps left waiting (``due_at`` NULL) although their previous step is settled.

    Normally a step is released in the same transaction that settles its predecessor; this
    repairs a ledger written by an older version or edited by hand, so a run never hangs.
    """
    prev = deliveries.alias("prev")
    waiting = select(deliveries.c.id, deliveries.c.to, deliveries.c.step, prev.c.state,
                     prev.c.sender).join(
        prev, and_(prev.c.run_id == deliveries.c.run_id, prev.c.to == deliveries.c.to,
                   prev.c.step == deliveries.c.step - 1),
    ).where(deliveries.c.run_id == run_id, deliveries.c.state == S.PLANNED,
            deliveries.c.due_at.is_(None), deliveries.c.step > 0, deliveries.c.gate.is_(None),
            prev.c.state.not_in([S.PLANNED, S.DISPATCHING]))
    rows = list(conn.execute(waiting))
    for delivery_id, _to, _step, prev_state, sender in rows:
        if prev_state in SENT_STATES:
            conn.execute(update(deliveries).where(deliveries.c.id == delivery_id)
                         .values(due_at=now, sender=sender))
        else:
            conn.execute(update(deliveries).where(deliveries.c.id == delivery_id)
                         .values(state=S.SKIPPED, reason="previous step not sent",
                                 updated_at=now))
    return len(rows)


