"""Second chances in the ledger: the rows awaiting a verdict on their outcome, and the
transaction that writes verdicts (another attempt in the same run, the fallback step in the
child run, or nothing more).

Hot in two ways. :func:`watched` runs every few seconds while a run has rows to judge, so
it reads only through ``ix_deliveries_watch`` (see migration 0013): that partial index holds
exactly the rows it returns, never a run's planned rows. :func:`recycle` writes up to a few
thousand verdicts at a time, from several ``campaign serve`` workers at once, and must
never make attempt n twice: each verdict is a conditional UPDATE of the source row first
(it moves only while ``watch`` is set), and the new row is inserted only when it moved.
The first worker's UPDATE holds the row until it commits; the second's then finds
``watch`` NULL and writes nothing. ``ux_deliveries_attempt`` (first_id, attempt) backs
that: a path that forgot the condition would fail, not send twice.

Both databases keep the tallies of 0010 by themselves here: every statement is a plain
single-row INSERT or UPDATE, which fires the row (SQLite) or statement (PostgreSQL)
triggers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Integer,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal,
    null,
    select,
    text,
    update,
)

from scheduler.ledger.models import WATCHED
from scheduler.ledger.queries.common import dumps
from scheduler.ledger.queries.tables import deliveries, runs, suppressions
from scheduler.ledger.rows import Recycled, WatchedRow
from scheduler.ledger.states import DeliveryState as S

#: The rule of a fallback attempt (``deliveries.rule``).
FALLBACK_RULE = "fallback"

_d = deliveries.alias("d")
_first = deliveries.alias("f")
_src = deliveries.alias("src")
_TIME = deliveries.c.due_at.type
# ix_deliveries_watch's predicate on the alias ``d``, literals and all: SQLite uses a
# partial index only when the query's WHERE repeats its terms, and PostgreSQL can prove
# ``state NOT IN ('planned', ...)`` only from constants, never from bound parameters.
_WATCHED_D = "d.watch IS NOT NULL AND d.state NOT IN ('planned', 'dispatching', 'held')"
assert _WATCHED_D.replace("d.", "") == WATCHED  # the index's predicate, word for word

_WATCHED_SELECT = (
    select(
        _d.c.id, func.coalesce(_d.c.first_id, _d.c.id), _d.c.run_id, _d.c.row, _d.c.step,
        _d.c.attempt, _d.c.to, _d.c.region, _d.c.kind, _d.c.state, _d.c.dispatched_at,
        # [fallback] after counts from the first attempt's send: one primary-key lookup
        func.coalesce(_first.c.dispatched_at, _d.c.dispatched_at),
        _d.c.delivered_at, _d.c.read_at, _d.c.ended_at, _d.c.details, _d.c.fallback,
        # suppressed now (an opt-out during attempt 1 ends the attempts): a primary-key probe
        exists().where(suppressions.c.number == _d.c.to),
    )
    .select_from(_d.outerjoin(_first, _first.c.id == _d.c.first_id))
    .where(_d.c.run_id == bindparam("run_id", type_=Integer), text(_WATCHED_D),
           _d.c.id > bindparam("after_id", type_=Integer))
    .order_by(_d.c.id)
    .limit(bindparam("limit", type_=Integer))
)


def _json(value: str | None) -> Any:
    return json.loads(value) if value else None


def watched(conn: Connection, run_id: int, *, limit: int = 2000,
            after_id: int = 0) -> list[WatchedRow]:
    """The run's rows awaiting a verdict (watched, and sent or settled: not planned,
    dispatching or held), in id order after ``after_id``, at most ``limit``."""
    rows = conn.execute(_WATCHED_SELECT, {"run_id": run_id, "after_id": after_id,
                                          "limit": limit})
    return [WatchedRow(
        id=r[0], first_id=r[1], run_id=r[2], row=r[3], step=r[4], attempt=r[5], to=r[6],
        region=r[7], kind=r[8], state=r[9], dispatched_at=r[10], first_dispatched_at=r[11],
        delivered_at=r[12], read_at=r[13], ended_at=r[14], details=_json(r[15]) or {},
        fallback=_json(r[16]), suppressed=bool(r[17]),
    ) for r in rows]


# ---------------------------------------------------------------------- the verdicts


@dataclass(frozen=True, slots=True)
class Write:
    """One verdict to write on ``row``: ``kind`` ``retry`` (attempt ``attempt`` of the same
    step by ``rule``, due at ``due_at``), ``fallback`` (attempt ``attempt`` in the child
    run, due now) or ``final`` (``reached`` or not); ``text`` is the verdict in words."""

    row: WatchedRow
    kind: str
    text: str
    rule: str | None = None
    attempt: int = 0
    due_at: datetime | None = None
    reached: bool = False


# the verdict on the source row, only while it is still to be taken (see the module)
_CLOSE = (update(deliveries)
          .where(deliveries.c.id == bindparam("src_id"), deliveries.c.watch.is_not(None))
          .values(watch=None, verdict=bindparam("verdict"), updated_at=bindparam("now")))

# attempt n of the same step: a copy of the source row, planned, watched in its turn. A
# later step keeps the step-0 sender its recipient talks with; step 0 takes any sender.
_RETRY = insert(deliveries).from_select(
    ["run_id", "seq", "row", "step", "kind", "path", "to", "region", "payload", "variables",
     "variant", "fallback", "state", "due_at", "attempt", "first_id", "rule", "watch",
     "attempts", "sender", "updated_at"],
    select(_src.c.run_id, _src.c.seq, _src.c.row, _src.c.step, _src.c.kind, _src.c.path,
           _src.c.to, _src.c.region, _src.c.payload, _src.c.variables, _src.c.variant,
           _src.c.fallback, literal(S.PLANNED.value),
           bindparam("due_at", type_=_TIME), bindparam("attempt"),
           func.coalesce(_src.c.first_id, _src.c.id), bindparam("rule"), literal(1),
           literal(0), case((_src.c.step == 0, null()), else_=_src.c.sender),
           bindparam("now", type_=_TIME))
    .where(_src.c.id == bindparam("src_id")),
).returning(deliveries.c.id)

# the fallback step in the child run: what the plan rendered for this recipient, due now
_FALLBACK = insert(deliveries).from_select(
    ["run_id", "seq", "row", "step", "kind", "path", "to", "region", "payload", "variables",
     "state", "due_at", "attempt", "first_id", "rule", "attempts", "updated_at"],
    select(bindparam("child"), _src.c.seq, _src.c.row, literal(0), bindparam("kind"),
           bindparam("path"), _src.c.to, _src.c.region, bindparam("payload"),
           _src.c.variables, literal(S.PLANNED.value), bindparam("now", type_=_TIME),
           bindparam("attempt"), func.coalesce(_src.c.first_id, _src.c.id),
           literal(FALLBACK_RULE), literal(0), bindparam("now", type_=_TIME))
    .where(_src.c.id == bindparam("src_id")),
).returning(deliveries.c.id)


def recycle(conn: Connection, writes: Sequence[Write], now: datetime, *,
            child: int | None) -> Recycled:
    """Write ``writes`` in the caller's transaction (see the module): each verdict closes
    its row (a row another worker closed already is left alone, counted ``taken_already``)
    and makes the retry or fallback row; ``child``: the fallback run (needed only for a
    fallback). The child's ``planned_count`` grows by its new rows."""
    retried: dict[str, int] = {}
    fell_back = final = reached = taken = 0
    made: list[int] = []
    earliest: datetime | None = None
    for w in writes:
        if w.kind == "fallback" and (child is None or not _fallback_step(w.row)):
            raise ValueError(f"row {w.row.id}: a fallback without "
                             + ("a fallback run" if child is None else "a fallback step"))
    for w in writes:
        moved = conn.execute(_CLOSE, {"src_id": w.row.id, "verdict": w.text, "now": now})
        if not moved.rowcount:
            taken += 1
            continue
        if w.kind == "retry":
            assert w.rule is not None and w.due_at is not None
            made.append(conn.execute(_RETRY, {
                "src_id": w.row.id, "due_at": w.due_at, "attempt": w.attempt,
                "rule": w.rule, "now": now}).scalar_one())
            retried[w.rule] = retried.get(w.rule, 0) + 1
            earliest = w.due_at if earliest is None else min(earliest, w.due_at)
        elif w.kind == "fallback":
            step = _fallback_step(w.row)
            made.append(conn.execute(_FALLBACK, {
                "src_id": w.row.id, "child": child, "kind": step["kind"],
                "path": step["path"], "payload": dumps(step["payload"]), "now": now,
                "attempt": w.attempt}).scalar_one())
            fell_back += 1
            earliest = now if earliest is None else min(earliest, now)
        else:
            final += 1
            reached += w.reached
    if fell_back:
        conn.execute(update(runs).where(runs.c.id == child)
                     .values(planned_count=runs.c.planned_count + fell_back))
    return Recycled(retried=retried, fell_back=fell_back, final=final, reached=reached,
                    taken_already=taken, made_due=made, earliest_due=earliest)


def _fallback_step(row: WatchedRow) -> dict[str, Any]:
    """The row's rendered fallback step, or {} (no fallback, or ``{"none": why}``)."""
    step = row.fallback or {}
    return step if {"kind", "path", "payload"} <= step.keys() else {}


# ---------------------------------------------------------------------- fallback runs


def child_of(conn: Connection, run_id: int) -> int | None:
    """The fallback run of ``run_id`` (``ux_runs_parent``: one at most), if any."""
    return conn.execute(select(runs.c.id).where(runs.c.parent_run_id == run_id)).scalar()


def parent_of(conn: Connection, run_id: int) -> tuple[int, str] | None:
    """The parent run of fallback run ``run_id`` and its status (None: not a fallback run)."""
    parent = runs.alias("parent")
    row = conn.execute(select(parent.c.id, parent.c.status)
                       .select_from(runs.join(parent, parent.c.id == runs.c.parent_run_id))
                       .where(runs.c.id == run_id)).first()
    return None if row is None else (int(row[0]), str(row[1]))
