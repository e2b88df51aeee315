"""The ledger's guarantees: all-or-nothing plans, guarded transitions, leases, control."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from sqlalchemy import inspect, update

from scheduler.ledger.exceptions import RunLocked, RunNotFound, RunStateError
from scheduler.ledger.queries import conversation as cq
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tables
from scheduler.ledger.queries.tables import runs as runs_table
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState, RunStatus
from tests.factories import T0, plan_rows


def _run(ledger: Ledger, name: str = "welcome") -> int:
    return ledger.create_run(campaign_name=name, channel="whatsapp", definition_path="c.toml",
                             definition={"senders": ["s1"]}, delivery_mode="at-most-once",
                             timezone="America/Sao_Paulo")


def test_new_database_gets_every_table(ledger: Ledger) -> None:
    tables = set(inspect(ledger.engine).get_table_names())
    assert {"campaigns", "runs", "deliveries", "events", "replies", "suppressions",
            "fires", "schedules", "alembic_version"} <= tables


def test_plan_is_stored_whole_with_due_times_and_skips(ledger: Ledger) -> None:
    run_id = _run(ledger)
    stored = ledger.store_plan(run_id, [plan_rows(10, steps=2, skip={3})], start_at=T0)
    assert stored == 20
    assert ledger.counts(run_id) == {"planned": 18, "skipped": 2}
    assert ledger.get_run(run_id).planned_count == 20
    with ledger.engine.connect() as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=100)
    # only step 0 is due; step 1 waits for step 0 to be accepted
    assert [d.step for d in due] == [0] * 9
    assert [d.seq for d in due] == sorted(d.seq for d in due)


def test_a_failing_plan_stores_nothing(ledger: Ledger) -> None:
    run_id = _run(ledger)

    def chunks():
        yield plan_rows(5)
        raise RuntimeError("CSV broke in chunk 2")

    with pytest.raises(RuntimeError):
        ledger.store_plan(run_id, chunks(), start_at=T0)
    assert ledger.counts(run_id) == {}


def test_suppressed_numbers_are_skipped_when_stored(ledger: Ledger) -> None:
    ledger.suppress("5511900000002", source="test")
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(4)], start_at=T0)
    with ledger.engine.connect() as conn:
        rows = conn.execute(tables.deliveries.select().where(
            tables.deliveries.c.to == "5511900000002")).mappings().all()
    assert [(r["state"], r["reason"]) for r in rows] == [("skipped", "suppressed")]


@pytest.mark.parametrize("others", [0, 10], ids=["list-shorter-than-plan",
                                                  "list-longer-than-plan"])
def test_suppressed_numbers_are_skipped_whatever_the_lists_length(ledger: Ledger,
                                                                  others: int) -> None:
    # a short list is read whole, a long one looked up number by number: same rows skipped
    for listed in ["5511900000001", "5511900000003",
                   *(f"5521988{i:06d}" for i in range(others))]:
        ledger.suppress(listed, source="test")
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(4, steps=2)], start_at=T0)
    with ledger.engine.connect() as conn:
        rows = conn.execute(tables.deliveries.select().where(
            tables.deliveries.c.state == "skipped")).mappings().all()
    assert sorted((r["to"], r["step"], r["reason"]) for r in rows) == [
        ("5511900000001", 0, "suppressed"), ("5511900000001", 1, "suppressed"),
        ("5511900000003", 0, "suppressed"), ("5511900000003", 1, "suppressed")]
    assert ledger.counts(run_id) == {"planned": 4, "skipped": 4}


def test_claim_moves_only_planned_rows_once(ledger: Ledger) -> None:
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(3)], start_at=T0)
    with ledger.engine.begin() as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=10)
        assert dq.claim(conn, [(d.id, "s1") for d in due], T0) == {d.id for d in due}
        assert dq.claim(conn, [(d.id, "s2") for d in due], T0) == set()
    assert ledger.counts(run_id) == {"dispatching": 3}


def test_accepting_a_step_releases_the_next_with_the_same_sender(ledger: Ledger) -> None:
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(1, steps=3)], start_at=T0)
    with ledger.engine.begin() as conn:
        (first,) = dq.due_deliveries(conn, run_id, T0, limit=10)
        dq.claim(conn, [(first.id, "s7")], T0)
        dq.record_accepted(conn, [(first.id, "3EB0ABC")], T0)
        dq.release_next_steps(conn, run_id, [(first.to, 0, "s7")], [0, 30, 0], T0)
        assert dq.due_deliveries(conn, run_id, T0, limit=10) == []
        (second,) = dq.due_deliveries(conn, run_id, T0 + timedelta(seconds=30), limit=10)
    assert (second.step, second.sender) == (1, "s7")


def test_failure_skips_the_recipients_later_steps(ledger: Ledger) -> None:
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(1, steps=3)], start_at=T0)
    with ledger.engine.begin() as conn:
        (first,) = dq.due_deliveries(conn, run_id, T0, limit=10)
        dq.claim(conn, [(first.id, "s1")], T0)
        dq.record_final(conn, [(first.id, "", "HTTP 400: bad")], DeliveryState.FAILED, T0)
        cq.skip_later_steps(conn, run_id, [(first.to, 0)], "previous step failed", T0)
    assert ledger.counts(run_id) == {"failed": 1, "skipped": 2}


def test_opt_out_skips_pending_deliveries_in_every_run(ledger: Ledger) -> None:
    a, b = _run(ledger, "a"), _run(ledger, "b")
    ledger.store_plan(a, [plan_rows(2)], start_at=T0)
    ledger.store_plan(b, [plan_rows(2)], start_at=T0)
    assert ledger.suppress("5511900000001", source="reply", reason="SAIR") is True
    assert ledger.suppress("5511900000001", source="reply", reason="SAIR") is False
    assert ledger.counts(a) == {"planned": 1, "skipped": 1}
    assert ledger.counts(b) == {"planned": 1, "skipped": 1}


def test_a_live_owner_locks_the_run_and_a_dead_one_does_not(ledger: Ledger) -> None:
    run_id = _run(ledger)
    ledger.acquire(run_id)
    assert ledger.get_run(run_id).owner_pid == os.getpid()
    with ledger.engine.begin() as conn:  # pretend another live process (our parent) owns it
        conn.execute(update(runs_table).values(
            owner_pid=os.getppid()))
    with pytest.raises(RunLocked, match=r"pause\|cancel"):
        ledger.acquire(run_id)
    with ledger.engine.begin() as conn:  # a pid that cannot exist
        conn.execute(update(runs_table).values(
            owner_pid=2**22 + 12345))
    assert ledger.acquire(run_id).owner_pid == os.getpid()


def test_control_requests_survive_in_the_database(ledger: Ledger) -> None:
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(3)], start_at=T0)
    ledger.set_status(run_id, RunStatus.RUNNING)
    ledger.request(run_id, "pause")
    assert ledger.control(run_id) == "pause"
    assert ledger.get_run(run_id).status == RunStatus.PAUSED
    ledger.request(run_id, "cancel")  # no live owner: cancelled at once
    run = ledger.get_run(run_id)
    assert run.status == RunStatus.CANCELLED
    assert ledger.counts(run_id) == {"skipped": 3}
    with pytest.raises(RunStateError, match="already cancelled"):
        ledger.request(run_id, "resume")


def test_a_run_one_worker_cancelled_is_not_completed_by_another(ledger: Ledger) -> None:
    # two workers dispatch one run: one obeys the cancel (its planned rows skipped), the
    # other then finds no work left; the run stays cancelled and both learn it
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(3)], start_at=T0)
    ledger.set_status(run_id, RunStatus.RUNNING)
    ledger.request(run_id, "cancel", served=True)
    assert ledger.cancel_pending(run_id) == RunStatus.CANCELLED
    assert ledger.end(run_id, RunStatus.COMPLETED, reason="every delivery is settled") \
        == RunStatus.CANCELLED
    assert ledger.end(run_id, RunStatus.PAUSED, reason="interrupted") == RunStatus.CANCELLED
    run = ledger.get_run(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.CANCELLED, "cancelled by the operator")
    assert ledger.counts(run_id) == {"skipped": 3}


def test_a_completed_run_is_not_cancelled_afterwards(ledger: Ledger) -> None:
    run_id = _run(ledger)
    ledger.store_plan(run_id, [plan_rows(1)], start_at=T0)
    ledger.set_status(run_id, RunStatus.RUNNING)
    with ledger.engine.begin() as conn:  # its one row settled
        conn.execute(update(tables.deliveries).values(state=DeliveryState.DELIVERED))
    assert ledger.end(run_id, RunStatus.COMPLETED, reason="every delivery is settled") \
        == RunStatus.COMPLETED
    assert ledger.cancel_pending(run_id) == RunStatus.COMPLETED  # a cancel read just before
    assert ledger.get_run(run_id).status == RunStatus.COMPLETED


def test_unknown_run_is_a_clear_error(ledger: Ledger) -> None:
    with pytest.raises(RunNotFound, match="run 99 not found"):
        ledger.get_run(99)
