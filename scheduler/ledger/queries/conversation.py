"""Steps that follow replies in the ledger: rows waiting for their condition, what the
looked-at step shows, and the transaction that stores each decision once.

A run whose steps have conditions marks their planned rows ``gate = 1`` when it is
dispatched (:func:`gate_steps`, before anything is sent); such a row is never released by
its previous step (``release_next_steps`` and ``repair_waiting_steps`` leave gated rows
alone) and never claimed (its ``due_at`` stays NULL). :func:`gated_rows` reads them through
``ix_deliveries_gate`` (the partial index holds exactly those rows) with what the ledger
holds of the step each looks at. :func:`write_decisions` stores decisions: each one is a
conditional UPDATE of the row first (it moves only while ``gate`` is set: a second worker,
or the same one after a crash, finds it cleared and writes nothing), then the
``step_decisions`` row (unique per delivery), in the caller's one transaction. A go sets the
row's ``due_at`` and sender (the looked-at step's: one conversation), so the claim takes it
like any released step, under the same pace, windows, caps and sender health.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, exists, func, insert, select, text, update

from scheduler.ledger.conversation_rows import DecisionWrite, GatedRow, Seen, SeenReply
from scheduler.ledger.models import GATED
from scheduler.ledger.queries.tables import (
    deliveries,
    link_clicks,
    replies,
    runs,
    step_decisions,
    suppressions,
)
from scheduler.ledger.states import DeliveryState as S

#: Numbers (or ids) per IN list.
CHUNK = 500
_GATED_D = GATED.replace("gate", "deliveries.gate").replace("state", "deliveries.state")


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


def gate_steps(conn: Connection, run_id: int, steps: Sequence[int]) -> int:
    """Mark the planned rows of ``steps`` as waiting for their condition (rows released,
    decided or settled are left alone); how many were marked."""
    if not steps:
        return 0
    decided = exists().where(step_decisions.c.delivery_id == deliveries.c.id)
    result = conn.execute(
        update(deliveries)
        .where(deliveries.c.run_id == run_id, deliveries.c.step.in_(list(steps)),
               deliveries.c.state == S.PLANNED, deliveries.c.due_at.is_(None),
               deliveries.c.gate.is_(None), ~decided)
        .values(gate=1))
    return int(result.rowcount or 0)


def gated_steps_of(conn: Connection, run_id: int) -> tuple[int, ...]:
    """The run's steps that wait for their condition, from its stored options (a run
    without conditions, or whose options are not readable here, has none: that is said
    where the run is dispatched)."""
    from scheduler.settings.run import OptionsError, RunOptions

    stored = conn.execute(select(runs.c.options).where(runs.c.id == run_id)).scalar()
    if not stored or '"conditions"' not in stored:  # no conversation: no parse
        return ()
    try:
        conversation = RunOptions.from_json(stored, run_id=run_id).conversation
    except OptionsError:
        return ()
    return conversation.gated_steps if conversation else ()


def _choices(raw: str | None) -> tuple[str, ...]:
    try:
        values = json.loads(raw) if raw else []
    except ValueError:
        return ()
    return tuple(str(v) for v in values if v) if isinstance(values, list) else ()


def gated_rows(conn: Connection, run_id: int, looks: Mapping[int, int], *, limit: int = 2000,
               after_id: int = 0, clicks: bool = False) -> list[GatedRow]:
    """The run's rows waiting for a decision (id order after ``after_id``, at most
    ``limit``), each with what the ledger holds of the step it looks at (``looks``: step
    → looked-at step); ``clicks``: read the first counted click too."""
    found = conn.execute(
        select(deliveries.c.id, deliveries.c.to, deliveries.c.step)
        .where(deliveries.c.run_id == run_id, text(_GATED_D), deliveries.c.id > after_id)
        .order_by(deliveries.c.id).limit(limit)).all()
    if not found:
        return []
    numbers = sorted({r.to for r in found})
    looked_steps = sorted({looks[r.step] for r in found if r.step in looks})
    looked: dict[tuple[str, int], Any] = {}
    suppressed: set[str] = set()
    for part in _chunks(numbers):
        for hit in conn.execute(
                select(deliveries.c.id, deliveries.c.to, deliveries.c.step, deliveries.c.state,
                       func.coalesce(deliveries.c.accepted_at, deliveries.c.dispatched_at),
                       deliveries.c.read_at, deliveries.c.sender)
                .where(deliveries.c.run_id == run_id, deliveries.c.to.in_(list(part)),
                       deliveries.c.step.in_(looked_steps), deliveries.c.first_id.is_(None))):
            looked[(hit[1], hit[2])] = hit
        suppressed.update(conn.execute(select(suppressions.c.number)
                                       .where(suppressions.c.number.in_(list(part)))).scalars())
    ids = sorted(r[0] for r in looked.values())
    answers: dict[int, list[SeenReply]] = {}
    clicked: dict[int, datetime] = {}
    for part in _chunks(ids):
        for got in conn.execute(
                select(replies.c.id, replies.c.delivery_id, replies.c.received_at,
                       replies.c.text, replies.c.choices, replies.c.opt_out)
                .where(replies.c.delivery_id.in_(list(part)))):
            answers.setdefault(got[1], []).append(
                SeenReply(got[0], got[2], got[3], _choices(got[4]), bool(got[5])))
        if clicks:
            clicked.update(conn.execute(
                select(link_clicks.c.delivery_id, func.min(link_clicks.c.at))
                .where(link_clicks.c.run_id == run_id,
                       link_clicks.c.delivery_id.in_(list(part)),
                       link_clicks.c.counted.is_(True))
                .group_by(link_clicks.c.delivery_id)).tuples().all())
    out = []
    for r in found:
        row = looked.get((r.to, looks.get(r.step, -1)))
        if row is None:
            seen = Seen(state=S.SKIPPED, sent_at=None, suppressed=r.to in suppressed)
            out.append(GatedRow(r.id, r.to, r.step, None, None, seen))
            continue
        seen = Seen(state=row[3], sent_at=row[4], read_at=row[5],
                    clicked_at=clicked.get(row[0]),
                    replies=tuple(answers.get(row[0], ())), suppressed=r.to in suppressed)
        out.append(GatedRow(r.id, r.to, r.step, row[0], row[6], seen))
    return out


def write_decisions(conn: Connection, run_id: int, writes: Sequence[DecisionWrite],
                    now: datetime) -> list[DecisionWrite]:
    """Store ``writes`` in the caller's transaction, each only while its row still waits
    (see the module); the ones written."""
    done = []
    for w in writes:
        row = w.row
        moved = deliveries.c.id == row.id
        guard = and_(moved, deliveries.c.gate.is_not(None), deliveries.c.state == S.PLANNED)
        if w.outcome == "go":
            values: dict[str, Any] = {"gate": None, "due_at": w.due_at, "updated_at": now}
            if row.sender is not None:
                values["sender"] = row.sender
        else:
            values = {"gate": None, "state": S.SKIPPED, "reason": f"condition: {w.reason}",
                      "updated_at": now}
        if not conn.execute(update(deliveries).where(guard).values(**values)).rowcount:
            continue  # decided already (another worker, or before a crash)
        conn.execute(insert(step_decisions).values(
            run_id=run_id, delivery_id=row.id, step=row.step, to=row.to,
            looked_id=row.looked_id, outcome=w.outcome, reason=w.reason, decided_at=now,
            reply_id=w.reply))
        if w.outcome == "go" and w.reply is not None:  # the reply was answered by a step
            conn.execute(update(replies).where(replies.c.id == w.reply).values(to_answer=False))
        if w.outcome == "skip" and w.branch:
            conn.execute(
                update(deliveries)
                .where(deliveries.c.run_id == run_id, deliveries.c.to == row.to,
                       deliveries.c.step.in_(list(w.branch)), deliveries.c.state == S.PLANNED,
                       deliveries.c.gate.is_(None), deliveries.c.due_at.is_(None))
                .values(state=S.SKIPPED, reason=f"branch not taken: step {row.step} was not "
                                                "sent", updated_at=now))
        done.append(w)
    return done


def note_late(conn: Connection, notes: Sequence[tuple[int, datetime, str]]) -> None:
    """Say on each decision (id) that a reply came after it (only the first is kept)."""
    for decision_id, at, note in notes:
        conn.execute(update(step_decisions)
                     .where(step_decisions.c.id == decision_id,
                            step_decisions.c.late_at.is_(None))
                     .values(late_at=at, late_note=note))


def decided_on(conn: Connection, delivery_id: int) -> list[tuple[int, str, datetime]]:
    """The decisions (id, outcome, decided at) that looked at delivery ``delivery_id`` and
    have no late reply noted yet (served by ``ix_step_decisions_looked_id``)."""
    d = step_decisions.c
    return [(int(i), str(o), at) for i, o, at in conn.execute(
        select(d.id, d.outcome, d.decided_at)
        .where(d.looked_id == delivery_id, d.late_at.is_(None)))]


def decision_counts(conn: Connection, run_id: int) -> dict[tuple[int, str], int]:
    """The run's decisions per (step, outcome), and rows still waiting as (step,
    ``waiting``)."""
    counts: Counter[tuple[int, str]] = Counter()
    for step, outcome, n in conn.execute(
            select(step_decisions.c.step, step_decisions.c.outcome, func.count())
            .where(step_decisions.c.run_id == run_id)
            .group_by(step_decisions.c.step, step_decisions.c.outcome)):
        counts[(int(step), str(outcome))] = int(n)
    for step, n in conn.execute(
            select(deliveries.c.step, func.count())
            .where(deliveries.c.run_id == run_id, text(_GATED_D))
            .group_by(deliveries.c.step)):
        counts[(int(step), "waiting")] = int(n)
    return dict(counts)


def decisions_of(conn: Connection, run_id: int, *, number: str | None = None,
                 limit: int = 50) -> list[dict[str, Any]]:
    """The run's latest decisions (a number's only, when given), newest first."""
    stmt = (select(step_decisions).where(step_decisions.c.run_id == run_id)
            .order_by(step_decisions.c.id.desc()).limit(limit))
    if number is not None:
        stmt = stmt.where(step_decisions.c.to == number)
    return [dict(r._mapping) for r in conn.execute(stmt)]


def any_decided(conn: Connection, run_ids: Sequence[int]) -> bool:
    """Whether one of the runs has a decision stored (``ix_step_decisions_run``)."""
    d = step_decisions.c
    return any(conn.execute(select(d.id).where(d.run_id == run_id).limit(1)).first()
               is not None for run_id in run_ids)


def decisions_between(conn: Connection, run_id: int, first_id: int, last_id: int
                      ) -> dict[int, tuple[str, str, str | None]]:
    """Delivery id → (outcome, reason, late note) of the run's decisions on deliveries
    ``first_id``…``last_id`` (a report's chunk: one range of the unique delivery index)."""
    d = step_decisions.c
    return {int(i): (str(o), str(r), n) for i, o, r, n in conn.execute(
        select(d.delivery_id, d.outcome, d.reason, d.late_note)
        .where(d.delivery_id >= first_id, d.delivery_id <= last_id, d.run_id == run_id))}


def first_step_numbers(conn: Connection, run_id: int) -> list[str]:
    """The numbers of the run's first step's planned rows, in plan order (a rehearsal's
    script of replies is drawn for them)."""
    d = deliveries.c
    return [str(n) for n in conn.execute(
        select(d.to).where(d.run_id == run_id, d.step == 0, d.state == S.PLANNED)
        .order_by(d.id)).scalars()]


#: Above any step: the bound of a recipient's later steps when no step waits for a reply.
_NO_STEP = 2**31 - 1


def skip_later_steps(
    conn: Connection, run_id: int, stopped: Sequence[tuple[str, int]], reason: str,
    now: datetime,
) -> None:
    """A step failed, expired or was skipped: the recipient's later steps are skipped too,
    up to the next step that waits for its condition (issue 35). That step, and the steps
    of its branch, are its decision's: it is decided on the step it looks at (skipped,
    with its decision stored, when that one was not sent), never ended here without one.

    One ``executemany`` over ``ix_deliveries_to``, only rows still ``planned``; a run with
    conditional steps reads them once from its options."""
    if not stopped:
        return
    gated = sorted(gated_steps_of(conn, run_id))
    params = []
    for to, step in stopped:
        until = next((g for g in gated if g > step), _NO_STEP)
        if until > step + 1:
            params.append({"b_to": to, "b_step": step, "b_until": until})
    if not params:
        return
    conn.execute(
        update(deliveries)
        .where(deliveries.c.run_id == run_id, deliveries.c.to == bindparam("b_to"),
               deliveries.c.step > bindparam("b_step"),
               deliveries.c.step < bindparam("b_until"), deliveries.c.state == S.PLANNED)
        .values(state=S.SKIPPED, reason=reason, updated_at=now),
        params,
    )
