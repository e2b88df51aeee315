"""A run's A/B test: its row, the test share's progress, the arms' counts, the decision.

None of these is on the send path: the dispatcher asks :func:`progress` only when it has
nothing due (with a held rest), and the decision is one transaction per run
(:func:`claim_decision`, :func:`arm_counts`, :func:`release_held`, :func:`store_decision`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    case,
    delete,
    exists,
    func,
    insert,
    select,
    text,
    update,
)

from scheduler.ledger.queries.tables import (
    deliveries,
    experiments,
    link_clicks,
    replies,
    runs,
)
from scheduler.ledger.rows import (
    ArmCount,
    ExperimentPlan,
    ExperimentRow,
)
from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S


def save(conn: Connection, run_id: int, plan: ExperimentPlan, now: datetime) -> None:
    """Store the run's test with its sizes (recipients of the first varied step sent at
    once, and held), in the plan's transaction. At a re-plan an undecided test is
    replaced; a decided one stands, and the rest the new plan holds gets its winner."""
    conn.execute(delete(experiments).where(experiments.c.run_id == run_id,
                                           experiments.c.decided_at.is_(None)))
    decided = read(conn, run_id)
    if decided is not None:
        if decided.goes is not None:
            release_held(conn, run_id, decided.goes, now)
        return
    d, step = deliveries, int(plan.settings.get("step", 0))
    sizes = conn.execute(
        select(func.sum(case((d.c.state == S.HELD, 0), else_=1)),
               func.sum(case((d.c.state == S.HELD, 1), else_=0)))
        .where(d.c.run_id == run_id, d.c.step == step,
               d.c.state.in_([S.PLANNED, S.HELD]))).one()
    conn.execute(insert(experiments).values(
        run_id=run_id, variants=json.dumps(plan.variants), control=plan.control,
        settings=json.dumps(plan.settings), test_size=int(sizes[0] or 0),
        rest_size=int(sizes[1] or 0)))


def read(conn: Connection, run_id: int) -> ExperimentRow | None:
    """The run's experiment, or None when it has none."""
    row = conn.execute(select(experiments).where(experiments.c.run_id == run_id)).first()
    if row is None:
        return None
    m = row._mapping
    return ExperimentRow(
        run_id=run_id, variants=[(str(n), float(w)) for n, w in json.loads(m["variants"])],
        control=m["control"], settings=json.loads(m["settings"]), test_size=m["test_size"],
        rest_size=m["rest_size"], test_sent_at=m["test_sent_at"], decide_at=m["decide_at"],
        decided_at=m["decided_at"], winner=m["winner"], goes=m["goes"],
        decision=json.loads(m["decision"]) if m["decision"] else None)


def progress(conn: Connection, run_id: int) -> tuple[int, int, datetime | None]:
    """(rows of the test share still to send, rows held, the test share's last send time).

    Rows ``planned`` or ``dispatching`` are the test share's (the rest is ``held``). While
    some are left, only they are counted (``ix_deliveries_claim``); the held rows and the
    last send time (a scan of the run) are read once none is.
    """
    d = deliveries
    pending = conn.execute(select(func.count()).where(
        d.c.run_id == run_id, d.c.state.in_([S.PLANNED, S.DISPATCHING]))).scalar_one()
    if pending:
        return int(pending), 0, None
    held = conn.execute(select(func.count()).where(d.c.run_id == run_id,
                                                   d.c.state == S.HELD)).scalar_one()
    last = conn.execute(select(func.max(func.coalesce(
        d.c.dispatched_at, d.c.accepted_at, d.c.sent_at))).where(d.c.run_id == run_id)
    ).scalar()
    return 0, int(held), last


def has_held(conn: Connection, run_id: int) -> bool:
    """Whether the run has rows held for its test's winner (an index probe of
    ``ix_deliveries_claim``: asked at every idle turn of a run with nothing due)."""
    stmt = select(deliveries.c.id).where(deliveries.c.run_id == run_id,
                                         deliveries.c.state == S.HELD).limit(1)
    return conn.execute(stmt).first() is not None


def mark_due(conn: Connection, run_id: int, test_sent_at: datetime | None,
             decide_at: datetime) -> None:
    """The test share is sent: record when, and when the test is due."""
    conn.execute(update(experiments).where(experiments.c.run_id == run_id,
                                           experiments.c.decided_at.is_(None))
                 .values(test_sent_at=test_sent_at, decide_at=decide_at))


def claim_decision(conn: Connection, run_id: int, now: datetime) -> bool:
    """Take the decision: True for the one transaction whose UPDATE moved ``decided_at``
    from NULL (another worker, or this one before a crash, may have decided already; on
    PostgreSQL a concurrent claim waits for this transaction, then finds it set)."""
    result = conn.execute(update(experiments).where(experiments.c.run_id == run_id,
                                                    experiments.c.decided_at.is_(None))
                          .values(decided_at=now))
    return (result.rowcount or 0) == 1


def _success(conn: Connection, metric: str, d: Any) -> Any:
    """Whether the recipient of exposure row ``d`` succeeded on ``metric`` (SQL)."""
    other = deliveries.alias("other")
    same = and_(other.c.run_id == d.c.run_id, other.c.to == d.c.to)
    if metric == "delivered":
        return d.c.delivered_at.is_not(None) | d.c.read_at.is_not(None) | d.c.state.in_(
            [S.DELIVERED, S.READ])
    if metric == "read":
        return d.c.read_at.is_not(None) | (d.c.state == S.READ)
    if metric == "answered":
        return d.c.state == S.ANSWERED
    if metric == "click":
        return exists().where(link_clicks.c.delivery_id == other.c.id, same,
                              link_clicks.c.counted.is_(True))
    # reply: any step of the recipient in this run
    return exists().where(same, other.c.replied_at.is_not(None))


def arm_counts(conn: Connection, run_id: int, step: int, metric: str) -> dict[str, ArmCount]:
    """Each variant's counts over the test share, by recipient: a send is the recipient's
    row of the first varied step ``step`` that the service took (``SENT_STATES``); a
    success is the metric (a reply or a click on any of the recipient's steps; delivered,
    read or answered on that row); a guardrail event is an opt-out reply to the run.

    Read once per run, in the decision's transaction: a scan of the run's rows of ``step``.
    """
    d = deliveries.alias("d")
    success = _success(conn, metric, d)
    opted = exists().where(replies.c.run_id == d.c.run_id, replies.c.number == d.c.to,
                           replies.c.opt_out.is_(True))
    stmt = (select(d.c.variant, func.count(),
                   func.sum(case((success, 1), else_=0)),
                   func.sum(case((opted, 1), else_=0)))
            .where(d.c.run_id == run_id, d.c.step == step, d.c.variant.is_not(None),
                   d.c.state.in_([str(s) for s in SENT_STATES]))
            .group_by(d.c.variant))
    return {name: ArmCount(int(n), int(ok or 0), int(bad or 0))
            for name, n, ok, bad in conn.execute(stmt)}


def _chosen_payload(conn: Connection, goes: str) -> Any:
    """The winner's payload out of ``choices`` (SQL), the row's own when it has none."""
    chosen: Any
    if conn.dialect.name == "postgresql":
        chosen = text("(CAST(deliveries.choices AS JSONB) -> :goes)::text").bindparams(
            goes=goes)
    else:
        path = '$."' + goes.replace("\\", "\\\\").replace('"', '\\"') + '"'
        chosen = func.json_extract(deliveries.c.choices, path)
    return func.coalesce(chosen, deliveries.c.payload)


def release_held(conn: Connection, run_id: int, goes: str, now: datetime) -> int:
    """The rest of the audience gets ``goes``: every ``held`` row becomes ``planned`` with
    that variant and its payload (first steps due now, later steps when their previous
    one is sent, as in a plan). One UPDATE; how many rows moved."""
    result = conn.execute(
        update(deliveries)
        .where(deliveries.c.run_id == run_id, deliveries.c.state == S.HELD)
        .values(state=S.PLANNED, variant=goes, payload=_chosen_payload(conn, goes),
                choices=None, due_at=case((deliveries.c.step == 0, now), else_=None),
                updated_at=now))
    return result.rowcount or 0


def store_decision(conn: Connection, run_id: int, *, winner: str | None, goes: str,
                   decision: str, decide_at: datetime | None,
                   test_sent_at: datetime | None) -> None:
    """Store the decision (JSON) with the winner and the variant that went to the rest."""
    conn.execute(update(experiments).where(experiments.c.run_id == run_id)
                 .values(winner=winner, goes=goes, decision=decision,
                         decide_at=func.coalesce(experiments.c.decide_at, decide_at),
                         test_sent_at=func.coalesce(experiments.c.test_sent_at,
                                                    test_sent_at)))
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger import outbox  # experiment.decided, in the decision's transaction

    outbox.experiment_decided(conn, run_id, winner, goes, decide_at or utcnow())


def expire_held(conn: Connection, run_id: int, now: datetime) -> int:
    """The run's latest send time passed before its test decided: held rows expire."""
    result = conn.execute(
        update(deliveries).where(deliveries.c.run_id == run_id, deliveries.c.state == S.HELD)
        .values(state=S.EXPIRED, reason="past the latest send time (waiting for the "
                "test's winner)", choices=None, updated_at=now))
    return result.rowcount or 0


def skip_held(conn: Connection, run_id: int, reason: str, now: datetime) -> int:
    """Held rows become ``skipped`` with ``reason`` (the run was cancelled)."""
    result = conn.execute(
        update(deliveries).where(deliveries.c.run_id == run_id, deliveries.c.state == S.HELD)
        .values(state=S.SKIPPED, reason=reason, choices=None, updated_at=now))
    return result.rowcount or 0


def run_has_variants(conn: Connection, run_id: int) -> bool:
    """Whether the run was planned with variants (its test's row, or a step's ``variants``
    or an ``[experiment]`` in its stored definition): rows by primary key, so a page of a
    run without variants never counts its rows per variant."""
    tested = conn.execute(select(experiments.c.run_id)
                          .where(experiments.c.run_id == run_id)).first()
    if tested is not None:
        return True
    stored = conn.execute(select(runs.c.definition).where(runs.c.id == run_id)).scalar()
    try:
        spec = json.loads(stored or "{}")
    except ValueError:
        return True  # unreadable: count, as before
    if not isinstance(spec, dict):
        return True
    steps = spec.get("steps") or []
    return bool(spec.get("experiment")) or any(
        isinstance(step, dict) and step.get("variants") for step in steps)


def variant_split(conn: Connection, run_id: int) -> dict[str | None, dict[str, int]]:
    """Rows per variant and state (NULL variant: held, or no variants)."""
    stmt = (select(deliveries.c.variant, deliveries.c.state, func.count())
            .where(deliveries.c.run_id == run_id)
            .group_by(deliveries.c.variant, deliveries.c.state))
    out: dict[str | None, dict[str, int]] = {}
    for variant, state, n in conn.execute(stmt):
        out.setdefault(variant, {})[state] = int(n)
    return out


@dataclass(frozen=True)
class VariantFigures:
    """One variant's rows of one step in a run: sent (the service took them), delivered,
    read and replied (the rows' times or states)."""

    step: int
    variant: str
    sent: int
    delivered: int
    read: int
    replied: int


def variant_figures(conn: Connection, run_id: int) -> list[VariantFigures]:
    """Each (step, variant) of the run's rows with a variant, in order (the report's
    Experiment sheet: one ``GROUP BY`` over the run's rows)."""
    d = deliveries
    sent = d.c.state.in_([str(s) for s in SENT_STATES])
    read_ = d.c.read_at.is_not(None) | (d.c.state == S.READ)
    delivered = d.c.delivered_at.is_not(None) | read_ | (d.c.state == S.DELIVERED)

    def count(condition: Any) -> Any:
        return func.sum(case((condition, 1), else_=0))

    stmt = (select(d.c.step, d.c.variant, count(sent), count(sent & delivered),
                   count(sent & read_), count(d.c.replied_at.is_not(None)))
            .where(d.c.run_id == run_id, d.c.variant.is_not(None))
            .group_by(d.c.step, d.c.variant).order_by(d.c.step, d.c.variant))
    return [VariantFigures(int(step), str(v), int(a or 0), int(b or 0), int(c or 0),
                           int(e or 0)) for step, v, a, b, c, e in conn.execute(stmt)]
