"""The receiver's writes to deliveries: apply events monotonically, replies, details.

Why hand-written here: the receiver applies thousands of events per second in group
commits (figure P4), so each batch is a handful of ``executemany`` statements keyed by the
indexed ``message_id_norm``. Every update is monotone (states only move up
``TRACKING_RANK``, timestamps keep the earliest evidence), so repeats, late and reordered
events all give the same final row. On SQLite the per-batch statements go through the
driver as plain SQL and tuples (:func:`~scheduler.ledger.queries.common.raw`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, case, func, or_, select, update
from sqlmodel.sql.sqltypes import UTCDateTime

from scheduler.ledger.queries import tallies
from scheduler.ledger.queries.common import raw, sqlite_time, state_in
from scheduler.ledger.queries.tables import deliveries, replies
from scheduler.ledger.rows import Funnel, LatestDelivery
from scheduler.ledger.run_rows import Tally
from scheduler.ledger.states import TRACKING_RANK
from scheduler.ledger.states import DeliveryState as S

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


_HELD = select(deliveries.c.message_id_norm).where(
    deliveries.c.message_id_norm.in_(bindparam("b_norms", expanding=True)))


def held_message_ids(conn: Connection, norms: Iterable[str]) -> set[str]:
    """Which normalised message ids some delivery holds.

    Hot (every receiver batch): ``IN`` lists of 500 over ``ix_deliveries_msgid``."""
    wanted = list(set(norms))
    found: set[str] = set()
    sqlite = conn.dialect.name == "sqlite"
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        if sqlite:
            sql = ("SELECT message_id_norm FROM deliveries WHERE message_id_norm IN "
                   f"({', '.join('?' for _ in chunk)})")
            found.update(m for (m,) in raw(conn).execute(sql, chunk).fetchall())
        else:
            found.update(conn.execute(_HELD, {"b_norms": chunk}).scalars())
    return found


@functools.cache
def _progress_stmt(target: str, stamps: tuple[str, ...]) -> Any:
    values: dict[str, Any] = {
        "state": case((state_in(*_moves_from(target)), target), else_=deliveries.c.state),
        "updated_at": bindparam("b_now", type_=UTCDateTime()),
    }
    for column in stamps:
        values[column] = _earliest(deliveries.c[column], "b_at")
    return (update(deliveries)
            .where(deliveries.c.message_id_norm == bindparam("b_mid"),
                   state_in(*TRACKED_STATES))
            .values(**values))


def track_progress(conn: Connection, target: str, params: Sequence[tuple[str, datetime]],
                   now: datetime, *, stamps: Sequence[str]) -> None:
    """Move deliveries holding each message id forward to ``target``; never backwards.

    Hot (every receiver batch): one ``executemany`` per (target, stamps) group; the
    ``CASE`` keeps a row's higher state and earliest times, so no read is needed first.

    ``params`` are (message id, when); each column of ``stamps`` (``sent_at``,
    ``delivered_at``, ``read_at``) keeps the earliest time any event gave it.
    """
    if not params:
        return
    if conn.dialect.name == "sqlite":
        at_now = sqlite_time(now)
        raw(conn).executemany(_sqlite_progress(str(target), tuple(stamps)),
                               [(sqlite_time(at), at_now, m) for m, at in params])
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


def latest_delivery_to(conn: Connection, number: str, session_id: str | None,
                       before: datetime) -> LatestDelivery | None:
    """The last delivery dispatched to ``number`` up to ``before``, and its run.

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
            return LatestDelivery(int(row[0]), int(row[1]))
    return None


def delivery_answered(conn: Connection, message_id_norm: str,
                      number: str | None) -> LatestDelivery | None:
    """The delivery holding the message a reply quotes (or the poll or list it answers), if
    it went to ``number`` (uses ``ix_deliveries_msgid``)."""
    conds = [deliveries.c.message_id_norm == message_id_norm]
    if number is not None:
        conds.append(deliveries.c.to == number)
    row = conn.execute(select(deliveries.c.id, deliveries.c.run_id).where(*conds)
                       .order_by(deliveries.c.id.desc()).limit(1)).first()
    return LatestDelivery(int(row[0]), int(row[1])) if row is not None else None


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


def merge_details(conn: Connection, message_id_norm: str, extra: dict[str, Any]) -> None:
    """Merge ``extra`` into the ``details`` JSON of the deliveries holding a message id
    (SMS and voice events only: a read and an update per delivery, rare enough)."""
    if not extra:
        return
    rows = conn.execute(select(deliveries.c.id, deliveries.c.details).where(
        deliveries.c.message_id_norm == message_id_norm)).all()
    for delivery_id, details in rows:
        try:
            current = json.loads(details) if details else {}
        except ValueError:
            current = {}
        merged = {**current, **extra} if isinstance(current, dict) else dict(extra)
        counted = current.get("segments") if isinstance(current, dict) else None
        if counted is not None and merged.get("segments") != counted \
                and "segmentsCounted" not in merged:
            merged["segmentsCounted"] = counted  # our count before sending differed
        if merged != current:
            conn.execute(update(deliveries).where(deliveries.c.id == delivery_id).values(
                details=json.dumps(merged, ensure_ascii=False, separators=(",", ":"))))


def record_details(conn: Connection, rows: Sequence[tuple[int, dict[str, Any]]]) -> None:
    """Merge what a send's answer said (SMS segments and cost) into ``details`` by delivery id.

    With every accepted SMS batch: one read of the rows' current details and one
    ``executemany`` (events applied earlier may have written some keys: theirs win).
    """
    if not rows:
        return
    ids = [delivery_id for delivery_id, _ in rows]
    current = dict(conn.execute(select(deliveries.c.id, deliveries.c.details)
                                .where(deliveries.c.id.in_(ids))).all())
    params = []
    for delivery_id, extra in rows:
        try:
            known = json.loads(current.get(delivery_id) or "{}")
        except ValueError:
            known = {}
        merged = {**extra, **known} if isinstance(known, dict) else dict(extra)
        params.append({"b_id": delivery_id, "b_details": json.dumps(
            merged, ensure_ascii=False, separators=(",", ":"))})
    conn.execute(update(deliveries).where(deliveries.c.id == bindparam("b_id"))
                 .values(details=bindparam("b_details")), params)


def funnel(conn: Connection, run_id: int, tally: Tally | None = None) -> Funnel:
    """How far the run's deliveries got (``campaign status``), counting a row by its time
    columns or, when an event gave no time, by its state: from the run's trigger-kept
    tallies (:meth:`.run_rows.Tally.tracking`; ``tally``: the run's, already read on
    ``conn``), no scan of its rows; opted out are the distinct numbers of its opt-out
    replies."""
    counts = (tally if tally is not None else tallies.read(conn, run_id)).tracking()
    opted = conn.execute(select(func.count(func.distinct(replies.c.number))).where(
        replies.c.run_id == run_id, replies.c.opt_out.is_(True))).scalar()
    return Funnel(sent=counts["sent"], delivered=counts["delivered"], read=counts["read"],
                  replied=counts["replied"], opted_out=int(opted or 0))
