"""A worker taking a sender over settles the rows its previous holder left ``dispatching``
exactly as a restarted process does (no event: ``unknown`` under at-most-once), and a
dispatcher starting settles rows a dead worker left in its run; a live worker's rows are
never touched (simulated clock)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from scheduler.dispatch.workers import WorkerSeat
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from tests.factories import T0, FakeClock, make_run, number

D = tables.deliveries


def _claimed(ledger: Ledger, run_id: int, i: int, sender: str, worker: str) -> None:
    """Row ``i`` of the run as a worker leaves it when it dies after its claim."""
    with ledger.transaction() as conn:
        conn.execute(update(D).where(D.c.run_id == run_id, D.c.to == number(i))
                     .values(state="dispatching", sender=sender, worker=worker,
                             dispatched_at=T0, due_at=None, attempts=1))


def _states(ledger: Ledger, run_id: int) -> list[str]:
    with ledger.read() as conn:
        return [r.state for r in conn.execute(
            D.select().where(D.c.run_id == run_id).order_by(D.c.seq))]


def _seat(ledger: Ledger, clock: FakeClock) -> WorkerSeat:
    seat = WorkerSeat(ledger, lease_s=3, clock=clock)
    seat.leasing = True  # the lease statements are the same on SQLite
    seat.register()
    return seat


def test_taking_a_dead_worker_s_sender_settles_its_rows_in_doubt(
        ledger: Ledger, clock: FakeClock) -> None:
    run_id = make_run(ledger, 4, senders=("s1", "s2"))
    with ledger.transaction() as conn:
        lq.acquire(conn, "s1", "dead", T0, T0 + timedelta(seconds=3))
        lq.acquire(conn, "s2", "alive", T0, T0 + timedelta(seconds=30))
    _claimed(ledger, run_id, 0, "s1", "dead")
    _claimed(ledger, run_id, 1, "s1", "dead")
    _claimed(ledger, run_id, 2, "s2", "alive")
    seat = _seat(ledger, clock)
    seat.want(run_id, ["s1", "s2"])

    seat.tick()  # s1 still leased to the dead worker: nothing moves
    assert seat.usable() == frozenset()
    assert _states(ledger, run_id) == ["dispatching", "dispatching", "dispatching", "planned"]

    clock.now = T0 + timedelta(seconds=3)
    seat.tick()
    assert seat.usable() == frozenset({"s1"})  # s2 is still the live worker's
    assert _states(ledger, run_id) == ["unknown", "unknown", "dispatching", "planned"]
    assert [(s, n) for s, _at, n in seat.takeovers] == [("s1", 2)]


def test_a_starting_dispatcher_settles_rows_a_dead_worker_left_in_its_run(
        ledger: Ledger, clock: FakeClock) -> None:
    run_id = make_run(ledger, 3)
    with ledger.transaction() as conn:
        lq.register_worker(conn, "alive", "elsewhere", 1, T0)
    _claimed(ledger, run_id, 0, "s1", "dead")
    _claimed(ledger, run_id, 1, "s1", "alive")
    seat = _seat(ledger, clock)
    assert seat.settle_orphans(run_id) == 1
    assert _states(ledger, run_id) == ["unknown", "dispatching", "planned"]
