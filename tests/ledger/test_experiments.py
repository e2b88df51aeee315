"""A run's A/B test in the ledger: sizes stored with the plan, the arms' counts, the
decision taken once (a second store finds it taken), the held rest planned with the
winner's payload, cancel and expiry of held rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from scheduler.ledger import access, rows
from scheduler.ledger.experiment_store import ExperimentStore
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.queue_store import QueueStore
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from tests.factories import T0, number

PLAN = rows.ExperimentPlan(variants=[("A", 1.0), ("B", 1.0)], control="A", settings={
    "step": 0, "metric": "reply", "wait_s": 3600.0, "confidence": 0.95,
    "min_per_variant": 0, "guardrail": "opt_out", "fallback": "A", "test_share": 0.5})


def _rows(test: int, rest: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(test + rest):
        held = i >= test
        variant = "AB"[i % 2]
        choices = {"A": {"text": f"A {i}"}, "B": {"text": f"B {i}"}}
        rows.append({"row": i + 1, "to": number(i), "step": 0, "kind": "text",
                     "path": "/api/v1/messages/send/text",
                     "payload": choices[variant], "variables": {}, "region": "BR",
                     "state": "held" if held else "planned", "reason": None,
                     "variant": None if held else variant,
                     "choices": choices if held else None})
    return rows


def _run(ledger: Ledger, test: int = 6, rest: int = 4) -> int:
    run_id = ledger.create_run(campaign_name="ab", channel="whatsapp", definition_path="t",
                               definition={}, delivery_mode="at-most-once",
                               timezone="America/Sao_Paulo")
    ledger.store_plan(run_id, [_rows(test, rest)], start_at=T0, experiment=PLAN)
    return run_id


def _set(ledger: Ledger, run_id: int, where: Any, **values: Any) -> None:
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(update(deliveries).where(deliveries.c.run_id == run_id, where)
                     .values(**values))


def _judge(row: rows.ExperimentRow, counts: dict[str, rows.ArmCount]) -> rows.ExperimentVerdict:
    return rows.ExperimentVerdict(winner="B", goes="B", decision=json.dumps(
        {n: [c.sends, c.successes, c.guardrail_events] for n, c in counts.items()}))


def test_the_plan_stores_the_test_with_its_sizes(ledger: Ledger) -> None:
    run_id = _run(ledger)
    with access.read(ledger.engine, "test") as conn:
        row = xq.read(conn, run_id)
    assert row is not None and (row.test_size, row.rest_size) == (6, 4)
    assert row.variants == [("A", 1.0), ("B", 1.0)] and row.decided_at is None
    assert ledger.counts(run_id) == {"planned": 6, "held": 4}


def test_the_decision_counts_the_arms_releases_the_rest_once(ledger: Ledger) -> None:
    run_id = _run(ledger)
    sent = T0 + timedelta(minutes=1)
    _set(ledger, run_id, deliveries.c.state == S.PLANNED, state=S.SENT, dispatched_at=sent)
    # B's recipients (odd rows) reply; one of A's opts out
    _set(ledger, run_id, deliveries.c.to.in_([number(1), number(3)]), replied_at=sent)
    with access.transaction(ledger.engine, "test") as conn:
        from scheduler.ledger.queries.tables import replies

        conn.execute(replies.insert().values(run_id=run_id, number=number(0), kind="text",
                                             opt_out=True, received_at=sent))
    first, second = ExperimentStore(ledger, run_id), ExperimentStore(ledger, run_id)
    progress = first.experiment_progress()
    assert progress is not None and (progress.pending, progress.held) == (0, 4)
    assert progress.last_send == sent
    now = T0 + timedelta(hours=2)
    verdict = first.decide_experiment(now, _judge)
    assert verdict is not None
    assert json.loads(verdict.decision) == {"A": [3, 0, 1], "B": [3, 2, 0]}
    assert second.decide_experiment(now, _judge) is None  # decided exactly once
    assert second.experiment_progress() is None
    with access.read(ledger.engine, "test") as conn:
        rest = conn.execute(select(deliveries.c.to, deliveries.c.state, deliveries.c.variant,
                                   deliveries.c.payload, deliveries.c.choices,
                                   deliveries.c.due_at)
                            .where(deliveries.c.run_id == run_id, deliveries.c.row > 6)).all()
        stored = xq.read(conn, run_id)
    assert len(rest) == 4
    for _to, state, variant, payload, choices, due_at in rest:
        assert (state, variant, choices, due_at) == ("planned", "B", None, now)
        assert json.loads(payload)["text"].startswith("B ")
    assert stored is not None and stored.goes == "B" and stored.decided_at == now
    assert stored.test_sent_at == sent


def test_a_failing_judge_leaves_the_test_undecided(ledger: Ledger) -> None:
    run_id = _run(ledger)
    _set(ledger, run_id, deliveries.c.state == S.PLANNED, state=S.SENT, dispatched_at=T0)
    store = ExperimentStore(ledger, run_id)

    def broken(_row: rows.ExperimentRow,
               _counts: dict[str, rows.ArmCount]) -> rows.ExperimentVerdict:
        raise RuntimeError("judge failed")

    with pytest.raises(RuntimeError, match="judge failed"):
        store.decide_experiment(T0, broken)
    assert store.experiment_progress() is not None  # rolled back: still to decide
    assert ledger.counts(run_id)["held"] == 4


def test_cancel_and_expiry_settle_held_rows(ledger: Ledger) -> None:
    run_id = _run(ledger)
    assert QueueStore(ledger, run_id).expire(T0) == 10
    assert ledger.counts(run_id) == {"expired": 10}
    other = _run(ledger)
    ledger.cancel_pending(other)
    assert ledger.counts(other) == {"skipped": 10}


def test_work_is_left_while_rows_are_held(ledger: Ledger) -> None:
    run_id = _run(ledger, test=0, rest=3)
    assert QueueStore(ledger, run_id).work_left() == (1, None)


def test_two_workers_deciding_at_once_decide_once(ledger: Ledger) -> None:
    """Two stores (two workers' dispatchers) race for the decision in two threads: one
    takes it, the other finds it taken; the rest is released once, to one variant."""
    import threading

    run_id = _run(ledger, test=6, rest=40)
    _set(ledger, run_id, deliveries.c.state == S.PLANNED, state=S.SENT, dispatched_at=T0)
    start = threading.Barrier(2)
    verdicts: list[rows.ExperimentVerdict | None] = []

    def worker(goes: str) -> None:
        store = ExperimentStore(ledger, run_id)
        start.wait()
        verdicts.append(store.decide_experiment(
            T0, lambda _r, _c: rows.ExperimentVerdict(winner=goes, goes=goes, decision="{}")))

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("A", "B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    taken = [v for v in verdicts if v is not None]
    assert len(verdicts) == 2 and len(taken) == 1
    with access.read(ledger.engine, "test") as conn:
        variants = {v for (v,) in conn.execute(
            select(deliveries.c.variant).where(deliveries.c.run_id == run_id,
                                               deliveries.c.row > 6))}
    assert variants == {taken[0].goes}


@pytest.mark.parametrize(("metric", "expected"), [
    ("click", {"A": 0, "B": 2}), ("read", {"A": 1, "B": 0}),
    ("delivered", {"A": 2, "B": 0}), ("answered", {"A": 0, "B": 0}),
    ("reply", {"A": 0, "B": 1}),
])
def test_each_metric_counts_its_successes(ledger: Ledger, metric: str,
                                          expected: dict[str, int]) -> None:
    """Counted clicks only (a preview fetcher's hit is not), reads, deliveries (a read
    one too), answered calls, replies: per variant of the test share."""
    from scheduler.ledger.queries.tables import link_clicks

    run_id = _run(ledger)
    _set(ledger, run_id, deliveries.c.state == S.PLANNED, state=S.SENT, dispatched_at=T0)
    _set(ledger, run_id, deliveries.c.to == number(0), delivered_at=T0)
    _set(ledger, run_id, deliveries.c.to == number(2), state=S.READ, read_at=T0)
    _set(ledger, run_id, deliveries.c.to == number(5), replied_at=T0)
    with access.transaction(ledger.engine, "test") as conn:
        ids = dict(conn.execute(select(deliveries.c.to, deliveries.c.id)
                                .where(deliveries.c.run_id == run_id)).all())
        for to, counted in ((number(1), True), (number(3), True), (number(4), False)):
            conn.execute(link_clicks.insert().values(
                run_id=run_id, link=1, delivery_id=ids[to], at=T0, counted=counted,
                why_not=None if counted else "preview fetcher"))
        counts = xq.arm_counts(conn, run_id, 0, metric)
    assert {name: c.successes for name, c in counts.items()} == expected
    assert {name: c.sends for name, c in counts.items()} == {"A": 3, "B": 3}


@contextmanager
def _decided_between_two_reads(ledger: Ledger) -> Iterator[int]:
    """A run whose test share is sent and whose rest (40) is held; inside the block, another
    worker decides the test just before the block's second read (its release commits
    between the two); after it, the release is checked to have happened."""
    from sqlalchemy import event

    run_id = _run(ledger, test=6, rest=40)
    _set(ledger, run_id, deliveries.c.state == S.PLANNED, state=S.SENT, dispatched_at=T0)
    reads: list[str] = []
    released: list[rows.ExperimentVerdict | None] = []

    def decide_before_the_second_read(_conn: Any, _cursor: Any, statement: str,
                                      *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            reads.append(statement)
            if len(reads) == 2:
                released.append(ExperimentStore(ledger, run_id).decide_experiment(T0, _judge))

    event.listen(ledger.engine, "before_cursor_execute", decide_before_the_second_read)
    try:
        yield run_id
    finally:
        event.remove(ledger.engine, "before_cursor_execute", decide_before_the_second_read)
    assert released and released[0] is not None  # the other worker released the rest
    assert ledger.counts(run_id) == {"sent": 6, "planned": 40}


def test_work_left_is_one_look_while_another_worker_releases_the_rest(
        ledger: Ledger) -> None:
    """A worker asks whether work is left just as another worker decides the test: the
    release (``held`` → ``planned``) commits between the look's reads. The look still sees
    the rest (held or planned), never "nothing left": that worker would mark the run
    completed with the winner's rows unsent (seen with three ``campaign serve`` workers on
    PostgreSQL, all waking at the test's decision time)."""
    with _decided_between_two_reads(ledger) as run_id:
        waiting, _next_due = QueueStore(ledger, run_id).work_left()
    assert waiting > 0


def test_the_tests_progress_is_one_look_while_another_worker_decides(
        ledger: Ledger) -> None:
    """A worker reads where the test stands just as another decides it: the release
    commits between the read of the test's row and the count of its rows. The worker sees
    the test as it stood (undecided, its rest held) or decided, never undecided with the
    winner's rows counted as the test share still to send (it would wait on them)."""
    with _decided_between_two_reads(ledger) as run_id:
        progress = ExperimentStore(ledger, run_id).experiment_progress()
    assert progress is None or (progress.pending, progress.held) == (0, 40)
