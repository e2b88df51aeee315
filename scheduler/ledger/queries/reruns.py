"""Re-runs, re-plans and re-queues: who already received a campaign, replacing a run's
pending plan, and queueing settled rows again.

Both run inside the plan writer's single transaction (see ``Ledger.store_plan`` and
``Ledger.replan``), so a crash leaves either the old plan or the new one, never a mix.
Each is one set-based statement over the ``(to, run_id)`` index, whatever the plan's size.
:func:`requeue` runs in its own transaction (``Ledger.requeue``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import (
    Connection,
    String,
    and_,
    bindparam,
    cast,
    delete,
    exists,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.orm import aliased

from scheduler.ledger.queries.conversation import gated_steps_of
from scheduler.ledger.queries.suppression import suppressed_numbers
from scheduler.ledger.queries.tables import deliveries, runs
from scheduler.ledger.states import RECEIVED_STATES, SENT_STATES
from scheduler.ledger.states import DeliveryState as S

_RECEIVED = sorted(str(s) for s in RECEIVED_STATES)
#: Rows of an old plan that a re-plan replaces: never handed to the service.
REPLACEABLE_STATES = (str(S.PLANNED), str(S.SKIPPED), str(S.HELD))


def skip_previous_recipients(conn: Connection, run_id: int, campaign_name: str,
                             target: str | None) -> int:
    """Skip this run's planned rows to numbers that received any step of the campaign before.

    Only earlier runs sent to the same ``target`` count (a rehearsal on the sandbox reached
    nobody); runs from before targets were recorded count too, to be safe. Returns how many
    rows were skipped (reason ``already received (run N)``).
    """
    older = aliased(deliveries)
    earlier = (
        select(func.max(older.c.run_id))
        .join(runs, runs.c.id == older.c.run_id)
        .where(runs.c.campaign_name == campaign_name, older.c.run_id != run_id,
               or_(runs.c.target.is_(None), runs.c.target == target),
               older.c.to == deliveries.c.to, older.c.state.in_(_RECEIVED))
        .scalar_subquery()
    )
    # One statement: the reason names the newest earlier run that reached the number.
    result = conn.execute(
        update(deliveries)
        .where(deliveries.c.run_id == run_id,
               deliveries.c.state.in_([str(S.PLANNED), str(S.HELD)]), earlier.is_not(None))
        .values(state=str(S.SKIPPED), choices=None,
                reason=literal("already received (run ", String)
                .concat(cast(earlier, String)).concat(literal(")", String)))
    )
    return result.rowcount or 0


def drop_replaceable_rows(conn: Connection, run_id: int) -> int:
    """Delete the rows of a run that were never handed to the service; returns how many.

    An attempt a retry rule planned (``first_id`` set) stays: its recipient's earlier
    attempt was sent, so the new plan drops that recipient's step, and the retry is all
    that is left of it (it keeps the message it was planned with)."""
    result = conn.execute(delete(deliveries).where(
        deliveries.c.run_id == run_id, deliveries.c.state.in_(REPLACEABLE_STATES),
        deliveries.c.first_id.is_(None)))
    return result.rowcount or 0


def max_delivery_id(conn: Connection, run_id: int) -> int:
    """The highest delivery id of a run (0 when it has none)."""
    return int(conn.execute(select(func.coalesce(func.max(deliveries.c.id), 0))
                            .where(deliveries.c.run_id == run_id)).scalar_one())


def drop_already_handled(conn: Connection, run_id: int, first_new_id: int) -> int:
    """Delete new rows (id > ``first_new_id``) whose recipient and step the run already sent,
    tried or settled: a re-plan never sends a step twice. Returns how many were dropped."""
    old = aliased(deliveries)
    handled = exists().where(
        old.c.run_id == run_id, old.c.id <= first_new_id,
        old.c.to == deliveries.c.to, old.c.step == deliveries.c.step)
    result = conn.execute(delete(deliveries).where(
        and_(deliveries.c.run_id == run_id, deliveries.c.id > first_new_id, handled)))
    return result.rowcount or 0


def count_rows(conn: Connection, run_id: int) -> int:
    """How many deliveries the run holds."""
    return conn.execute(select(func.count()).select_from(deliveries)
                        .where(deliveries.c.run_id == run_id)).scalar_one()


def unpin_removed_senders(conn: Connection, run_id: int, senders: list[str]) -> int:
    """Planned rows pinned to a sender no longer in ``senders`` lose the pin; returns how many."""
    stmt = update(deliveries).where(
        deliveries.c.run_id == run_id, deliveries.c.state == str(S.PLANNED),
        deliveries.c.sender.is_not(None))
    if senders:
        stmt = stmt.where(deliveries.c.sender.not_in(senders))
    return conn.execute(stmt.values(sender=None)).rowcount or 0


def _gated_steps(conn: Connection, run_id: int) -> list[int]:
    """The run's steps that follow replies (its stored options'; the dispatcher gates
    their rows when it starts, see :mod:`scheduler.ledger.queries.conversation`)."""
    return list(gated_steps_of(conn, run_id))


def continue_after_handled(conn: Connection, run_id: int, last_old_id: int,
                           delays_s: Sequence[float], now: datetime) -> None:
    """New later-step rows whose previous step the run already handled: due, or skipped.

    A re-plan keeps a recipient's sent first step and writes their second step again; that
    row must become due (the step's delay after the first was accepted, on the same sender)
    as :func:`release_next_steps` would have made it, or be skipped if the first failed.
    """
    old = aliased(deliveries)
    stmt = (
        select(deliveries.c.id, deliveries.c.step, old.c.state, old.c.accepted_at,
               old.c.sender)
        .join(old, and_(old.c.run_id == run_id, old.c.id <= last_old_id,
                        old.c.to == deliveries.c.to, old.c.step == deliveries.c.step - 1))
        .where(deliveries.c.run_id == run_id, deliveries.c.id > last_old_id,
               deliveries.c.step > 0, deliveries.c.state == str(S.PLANNED))
    )
    gated = _gated_steps(conn, run_id)
    if gated:  # a step that waits for a reply goes by its decision, not its previous step
        stmt = stmt.where(deliveries.c.step.not_in(gated))
    found = conn.execute(stmt).all()
    due, stopped = [], []
    for new_id, step, state, accepted_at, sender in found:
        if state in SENT_STATES:
            delay = delays_s[step] if step < len(delays_s) else 0.0
            base = accepted_at or now
            due.append({"b_id": new_id, "b_due": base + timedelta(seconds=delay),
                        "b_sender": sender})
        elif state != str(S.DISPATCHING):  # failed, expired, unknown: the sequence stops
            stopped.append({"b_id": new_id})
    if due:
        conn.execute(update(deliveries).where(deliveries.c.id == bindparam("b_id"))
                     .values(due_at=bindparam("b_due"), sender=bindparam("b_sender")), due)
    if stopped:
        conn.execute(update(deliveries).where(deliveries.c.id == bindparam("b_id"))
                     .values(state=str(S.SKIPPED), reason="previous step not sent",
                             updated_at=now), stopped)


def count_skipped_as_received(conn: Connection, run_id: int) -> int:
    """Rows of a re-run skipped because their number received the campaign before."""
    return conn.execute(select(func.count()).select_from(deliveries).where(
        deliveries.c.run_id == run_id, deliveries.c.state == str(S.SKIPPED),
        deliveries.c.reason.like("already received (run %"))).scalar_one()


def requeue(conn: Connection, run_id: int, states: Sequence[str], now: datetime, *,
            ids: Sequence[int] | None = None) -> int:
    """Rows of ``run_id`` in ``states`` (only ``ids`` among them, when given) go back to
    ``planned`` (due now); the later steps that were skipped because of them wait again for
    their previous step."""
    stmt = select(deliveries.c.id, deliveries.c.to, deliveries.c.step).where(
        deliveries.c.run_id == run_id, deliveries.c.state.in_(list(states)))
    if ids is not None:
        wanted = set(ids)
        targets = [t for t in conn.execute(stmt) if t.id in wanted]
    else:
        targets = list(conn.execute(stmt))
    if not targets:
        return 0
    suppressed = suppressed_numbers(conn, (t.to for t in targets))
    targets = [t for t in targets if t.to not in suppressed]
    if not targets:
        return 0
    conn.execute(
        update(deliveries).where(deliveries.c.id == bindparam("b_id")).values(
            state=S.PLANNED, due_at=now, reason=None, updated_at=now),
        [{"b_id": t.id} for t in targets],
    )
    conn.execute(
        update(deliveries).where(
            deliveries.c.run_id == run_id, deliveries.c.to == bindparam("b_to"),
            deliveries.c.step > bindparam("b_step"), deliveries.c.state == S.SKIPPED,
            deliveries.c.reason == "previous step not sent",
        ).values(state=S.PLANNED, due_at=None, reason=None, updated_at=now),
        [{"b_to": t.to, "b_step": t.step} for t in targets],
    )
    return len(targets)
