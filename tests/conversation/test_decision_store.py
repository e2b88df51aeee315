"""The ledger's side of steps that follow replies: gated rows are never released by their
previous step, each decision is written once (a second worker's, or a repeat after a crash,
writes nothing), a go queues the row on the looked-at step's sender and a skip skips its
branch."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from scheduler.ledger import access
from scheduler.ledger.conversation_rows import DecisionWrite
from scheduler.ledger.conversation_store import ConversationStore
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries.tables import deliveries, step_decisions
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingBatch
from tests.factories import T0, make_run, number


def _rows(ledger: Ledger, run_id: int) -> dict[tuple[str, int], tuple[str, object, object]]:
    d = deliveries.c
    with access.read(ledger.engine) as conn:
        return {(r.to, r.step): (r.state, r.due_at, r.sender) for r in conn.execute(
            select(d.to, d.step, d.state, d.due_at, d.sender).where(d.run_id == run_id))}


def test_gated_rows_wait_and_are_decided_once(ledger: Ledger) -> None:
    run_id = make_run(ledger, 2, steps=4)  # 0 question, 1 and 2 gated, 3 follows step 2
    store = ConversationStore(ledger, run_id)
    assert store.gate([1, 2]) == 4
    assert store.gate([1, 2]) == 0  # idempotent
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:  # step 0 sent to both by s1
        conn.execute(update(deliveries).where(d.run_id == run_id, d.step == 0)
                     .values(state="delivered", sender="s1", accepted_at=T0, due_at=None))
        dq.release_next_steps(conn, run_id, [(number(0), 0, "s1"), (number(1), 0, "s1")],
                              [0.0, 5.0, 5.0, 0.0], T0)
        assert dq.repair_waiting_steps(conn, run_id, T0) == 0
    rows = _rows(ledger, run_id)
    assert rows[(number(0), 1)] == ("planned", None, None)  # never released by step 0

    gated = store.gated({1: 0, 2: 0})
    assert [(g.to, g.step, g.sender, g.seen.state) for g in gated] == [
        (number(0), 1, "s1", "delivered"), (number(0), 2, "s1", "delivered"),
        (number(1), 1, "s1", "delivered"), (number(1), 2, "s1", "delivered")]
    first, second = gated[0], gated[1]
    now = T0 + timedelta(seconds=30)
    writes = [DecisionWrite(first, "go", "replied '1'", due_at=now),
              DecisionWrite(second, "skip", "replied '1': not ^2", branch=(3,))]
    assert store.decide(writes, now) == writes
    other_worker = ConversationStore(ledger, run_id)
    assert other_worker.decide(writes, now) == []  # decided already: nothing written
    rows = _rows(ledger, run_id)
    assert rows[(number(0), 1)][0] == "planned" and rows[(number(0), 1)][2] == "s1"
    assert rows[(number(0), 1)][1] is not None  # queued: the claim takes it when due
    assert rows[(number(0), 2)][0] == "skipped"
    assert rows[(number(0), 3)][0] == "skipped"  # its branch
    assert rows[(number(1), 3)][0] == "planned"
    with access.read(ledger.engine) as conn:
        stored = conn.execute(select(step_decisions.c.to, step_decisions.c.step,
                                     step_decisions.c.outcome)).all()
    assert sorted(stored) == [(number(0), 1, "go"), (number(0), 2, "skip")]
    assert [g.to for g in store.gated({1: 0, 2: 0})] == [number(1), number(1)]


def test_a_reply_after_the_decision_is_noted_not_undoing_it(ledger: Ledger) -> None:
    from scheduler.tracking.apply import late_reply

    run_id = make_run(ledger, 1, steps=2)
    store = ConversationStore(ledger, run_id)
    store.gate([1])
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(deliveries).where(d.run_id == run_id, d.step == 0)
                     .values(state="delivered", sender="s1", accepted_at=T0))
    [row] = store.gated({1: 0})
    decided = T0 + timedelta(seconds=10)
    store.decide([DecisionWrite(row, "skip", "no reply within 8 s")], decided)
    with access.transaction(ledger.engine) as conn:
        late_reply(TrackingBatch(conn), row.looked_id or 0, "2", T0 + timedelta(seconds=12))
        late_reply(TrackingBatch(conn), row.looked_id or 0, "3",
                   T0 + timedelta(seconds=14))  # the first kept
    with access.read(ledger.engine) as conn:
        note = conn.execute(select(step_decisions.c.outcome,
                                   step_decisions.c.late_note)).one()
    assert note.outcome == "skip"
    assert note.late_note == ("a reply '2' came after the decision (at 2026-11-23T12:00:12"
                              "+00:00, decided 2026-11-23T12:00:10+00:00): not undone, the "
                              "step stays not sent")
    assert _rows(ledger, run_id)[(number(0), 1)][0] == "skipped"


def test_migration_0019_goes_down_and_up_with_rows(ledger_url: str) -> None:
    from alembic import command
    from sqlalchemy import text

    from scheduler.ledger.db import alembic_config, open_ledger

    engine = open_ledger(ledger_url)
    try:
        ledger = Ledger(engine)
        run_id = make_run(ledger, 2, steps=2)
        store = ConversationStore(ledger, run_id)
        store.gate([1])
        config = alembic_config(engine)
        command.downgrade(config, "0018")
        with engine.connect() as conn:
            left = conn.execute(text("SELECT COUNT(*) FROM deliveries")).scalar()
            names = {c for (c,) in conn.execute(text(
                "SELECT name FROM pragma_table_info('deliveries')"
                if engine.dialect.name == "sqlite" else
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'deliveries'"))}
        assert left == 4 and "gate" not in names
        command.upgrade(config, "head")
        assert store.gate([1]) == 2  # gated again on the next dispatch
        with access.read(engine) as conn:
            assert conn.execute(select(step_decisions.c.id)).all() == []
    finally:
        engine.dispose()


def test_a_replan_leaves_the_steps_that_wait_for_replies_to_their_decision(
        ledger: Ledger) -> None:
    from scheduler.ledger.queries.tables import runs
    from scheduler.settings.conversation import ConversationOptions, StepCondition
    from scheduler.settings.run import from_snapshot
    from tests.factories import plan_rows

    run_id = make_run(ledger, 1, steps=2)
    options = from_snapshot({"senders": ["s1"], "steps": [{}, {}]}).model_copy(update={
        "conversation": ConversationOptions(conditions=(StepCondition(
            step=1, looks_at=0, kind="replied", wait_s=60, text="replied = true"),))})
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:  # the question went out
        conn.execute(update(runs).where(runs.c.id == run_id).values(options=options.to_json()))
        conn.execute(update(deliveries).where(d.run_id == run_id, d.step == 0)
                     .values(state="delivered", sender="s1", accepted_at=T0, due_at=None))
    ledger.replan(run_id, [plan_rows(1, steps=2)], start_at=T0, definition={},
                  fingerprint="{}", options=options)
    assert _rows(ledger, run_id)[(number(0), 1)] == ("planned", None, None)


def test_a_step_not_sent_leaves_the_later_conditions_to_their_decision(
        ledger: Ledger) -> None:
    """A branch's step in doubt at a kill and settled ``unknown`` at the resume (its proof
    came after the grace) stops only the steps that follow it without a condition: the
    later conditional steps still wait, are decided on the step they look at, and each
    decision is stored (issue 35: decided once per recipient, stored and shown)."""
    from scheduler.ledger.changes import ProofRule, Settle
    from scheduler.ledger.queries.tables import runs
    from scheduler.ledger.queue_store import QueueStore
    from scheduler.settings.conversation import ConversationOptions, StepCondition
    from scheduler.settings.run import from_snapshot

    run_id = make_run(ledger, 1, steps=5)  # 0 question, 1 gated + 2 its branch, 3 gated, 4
    conditions = tuple(StepCondition(step=s, looks_at=0, kind="replied", wait_s=60,
                                     text="replied = true") for s in (1, 3))
    options = from_snapshot({"senders": ["s1"], "steps": [{}] * 5}).model_copy(
        update={"conversation": ConversationOptions(conditions=conditions)})
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(runs).where(runs.c.id == run_id).values(options=options.to_json()))
        conn.execute(update(deliveries).where(d.run_id == run_id, d.step == 0)
                     .values(state="delivered", sender="s1", accepted_at=T0, due_at=None))
    store = ConversationStore(ledger, run_id)
    assert store.gate([1, 3]) == 2
    [one, _three] = store.gated({1: 0, 3: 0})
    store.decide([DecisionWrite(one, "go", "replied '1'", due_at=T0)], T0)
    with access.transaction(ledger.engine) as conn:  # step 1 in flight at the kill
        conn.execute(update(deliveries).where(d.run_id == run_id, d.step == 1)
                     .values(state="dispatching", dispatched_at=T0, due_at=None))
    later = T0 + timedelta(seconds=30)
    counts = QueueStore(ledger, run_id).settle_in_doubt(
        later, ProofRule(frozenset({"messages.sent"}), True),
        lambda item: Settle(item.row, "unknown", "no proof"))
    assert counts["unknown"] == 1
    rows = _rows(ledger, run_id)
    assert rows[(number(0), 2)][0] == "skipped"  # step 1's own branch stops with it
    assert rows[(number(0), 3)] == ("planned", None, None)  # still waits for its condition
    assert rows[(number(0), 4)][0] == "planned"  # step 3's branch, released or skipped by it
    [three] = store.gated({1: 0, 3: 0})
    assert three.step == 3
    store.decide([DecisionWrite(three, "skip", "no reply within 1 min", branch=(4,))], later)
    with access.read(ledger.engine) as conn:
        stored = conn.execute(select(step_decisions.c.step, step_decisions.c.outcome)
                              .order_by(step_decisions.c.step)).all()
    assert [tuple(s) for s in stored] == [(1, "go"), (3, "skip")]
    assert _rows(ledger, run_id)[(number(0), 4)][0] == "skipped"


def test_a_question_left_unknown_at_a_resume_has_each_condition_decided_not_sent(
        ledger: Ledger) -> None:
    """The question itself in doubt at a kill, settled ``unknown`` at the resume: every
    conditional step of that recipient is still decided (not sent, the question was not
    proven sent) with its decision stored, not ended without one."""
    from scheduler.dispatch.conversation.rules import Skip, decide
    from scheduler.ledger.changes import ProofRule, Settle
    from scheduler.ledger.queries.tables import runs
    from scheduler.ledger.queue_store import QueueStore
    from scheduler.settings.conversation import ConversationOptions, StepCondition
    from scheduler.settings.run import from_snapshot

    run_id = make_run(ledger, 1, steps=4)
    conditions = (StepCondition(step=1, looks_at=0, kind="reply_matches", pattern="^1",
                                wait_s=8, text='reply_matches = "^1"'),
                  StepCondition(step=2, looks_at=0, kind="reply_matches", pattern="^2",
                                wait_s=8, text='reply_matches = "^2"'),
                  StepCondition(step=3, looks_at=0, kind="not_replied", wait_s=3,
                                text='not_replied_within = "3s"'))
    options = from_snapshot({"senders": ["s1"], "steps": [{}] * 4}).model_copy(
        update={"conversation": ConversationOptions(conditions=conditions)})
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:  # the question in flight at the kill
        conn.execute(update(runs).where(runs.c.id == run_id).values(options=options.to_json()))
        conn.execute(update(deliveries).where(d.run_id == run_id, d.step == 0)
                     .values(state="dispatching", sender="s1", dispatched_at=T0, due_at=None))
    store = ConversationStore(ledger, run_id)
    assert store.gate([1, 2, 3]) == 3
    later = T0 + timedelta(seconds=30)
    QueueStore(ledger, run_id).settle_in_doubt(
        later, ProofRule(frozenset({"messages.sent"}), True),
        lambda item: Settle(item.row, "unknown", "no proof"))
    gated = store.gated({1: 0, 2: 0, 3: 0})
    assert [g.step for g in gated] == [1, 2, 3]  # still waiting for their decision
    writes = []
    for row in gated:
        cond = options.conversation.condition(row.step) if options.conversation else None
        assert cond is not None
        decision = decide(cond, row.seen, later)
        assert isinstance(decision, Skip) and decision.why == "step 0 was not sent (unknown)"
        writes.append(DecisionWrite(row, "skip", decision.why))
    assert store.decide(writes, later) == writes
    with access.read(ledger.engine) as conn:
        assert conn.execute(select(func.count()).select_from(step_decisions)).scalar() == 3
