"""A worker taking a sender over settles the rows its previous holder left ``dispatching``
exactly as a restarted process does (no event: ``unknown`` under at-most-once), and a
dispatcher starting settles rows a dead worker left in its run; a live worker's rows are
never touched; a sender taken over keeps its daily cap counting what its previous holder
sent (simulated clock)."""

from __future__ import annotations

import random
from datetime import timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import update

from scheduler.dispatch.leases import LeaseGate
from scheduler.dispatch.senders import SenderPool
from scheduler.dispatch.workers import WorkerSeat
from scheduler.ledger import access
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.wiring import store_for, worker_store
from tests.factories import T0, FakeClock, make_run, number

D = tables.deliveries


def _claimed(ledger: Ledger, run_id: int, i: int, sender: str, worker: str) -> None:
    """Row ``i`` of the run as a worker leaves it when it dies after its claim."""
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(D).where(D.c.run_id == run_id, D.c.to == number(i))
                     .values(state="dispatching", sender=sender, worker=worker,
                             dispatched_at=T0, due_at=None, attempts=1))


def _states(ledger: Ledger, run_id: int) -> list[str]:
    with access.read(ledger.engine) as conn:
        return [r.state for r in conn.execute(
            D.select().where(D.c.run_id == run_id).order_by(D.c.seq))]


def _seat(ledger: Ledger, clock: FakeClock) -> WorkerSeat:
    seat = WorkerSeat(worker_store(ledger), store_for(ledger), lease_s=3, clock=clock)
    seat.leasing = True  # the lease statements are the same on SQLite
    seat.register()
    return seat


def test_taking_a_dead_worker_s_sender_settles_its_rows_in_doubt(
        ledger: Ledger, clock: FakeClock) -> None:
    run_id = make_run(ledger, 4, senders=("s1", "s2"))
    with access.transaction(ledger.engine) as conn:
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
    with access.transaction(ledger.engine) as conn:
        lq.register_worker(conn, "alive", "elsewhere", 1, T0)
    _claimed(ledger, run_id, 0, "s1", "dead")
    _claimed(ledger, run_id, 1, "s1", "alive")
    seat = _seat(ledger, clock)
    assert seat.settle_orphans(run_id) == 1
    assert _states(ledger, run_id) == ["unknown", "dispatching", "planned"]


def test_a_taken_sender_s_daily_cap_and_plan_limit_count_its_previous_holder_s_sends(
        ledger: Ledger, clock: FakeClock) -> None:
    zone = ZoneInfo("America/Sao_Paulo")
    run_id = make_run(ledger, 8, senders=("s1",))
    # this worker's dispatcher made its pool at T0, when nobody had sent through s1 today
    pool = SenderPool(["s1"], rate=1.0, rng=random.Random(1), daily_cap=5, tz=zone, now=T0)
    with access.transaction(ledger.engine) as conn:  # then another worker held s1 and sent 3 rows
        lq.acquire(conn, "s1", "other", T0, T0 + timedelta(seconds=3))
        conn.execute(update(D).where(D.c.run_id == run_id,
                                     D.c.to.in_([number(i) for i in range(3)]))
                     .values(state="accepted", sender="s1", worker="other",
                             dispatched_at=T0 + timedelta(seconds=1)))
    seat = _seat(ledger, clock)
    gate = LeaseGate(seat, run_id, ["s1"])
    clock.now = T0 + timedelta(seconds=3)  # its lease ran out: s1 moves here
    seat.tick()
    day_start = clock.now.astimezone(zone).replace(hour=0, minute=0, second=0, microsecond=0)
    assert gate.sync(pool, clock.now, day_start=day_start, plan_limit=4)
    s1 = pool.senders["s1"]
    assert s1.pace.daily.remaining(clock.now) == 2  # 5 a day, 3 already sent today
    assert s1.quota_left == 1  # the campaign's plan limit of 4, 3 used


def test_a_worker_wakes_when_a_dead_worker_s_lease_ends_not_at_its_next_tick(
        ledger: Ledger, clock: FakeClock) -> None:
    run_id = make_run(ledger, 2, senders=("s1",))
    with access.transaction(ledger.engine) as conn:
        lq.acquire(conn, "s1", "dead", T0, T0 + timedelta(seconds=7))
    # a tick every 5 s
    seat = WorkerSeat(worker_store(ledger), store_for(ledger), lease_s=15, clock=clock)
    seat.leasing = True
    seat.register()
    seat.want(run_id, ["s1"])
    seat.tick()
    assert seat.usable() == frozenset()
    assert seat.next_tick_s() == 5.0  # the lease ends in 7 s: the regular tick first
    clock.now = T0 + timedelta(seconds=5)
    seat.tick()
    assert abs(seat.next_tick_s() - 2.02) < 1e-9  # just after the lease ends
    clock.now += timedelta(seconds=seat.next_tick_s())
    seat.tick()
    assert seat.usable() == frozenset({"s1"})
    assert seat.next_tick_s() == 5.0


def test_a_taken_sender_paces_on_from_the_latest_send_in_the_ledger(
        ledger: Ledger, clock: FakeClock) -> None:
    run_id = make_run(ledger, 4, senders=("s1",))
    last = T0 + timedelta(milliseconds=2500)
    with access.transaction(ledger.engine) as conn:
        lq.acquire(conn, "s1", "other", T0, T0 + timedelta(seconds=3))
        # a send its lease did not record (a foreground `campaign run` claims unfenced)
        conn.execute(update(D).where(D.c.run_id == run_id, D.c.to == number(0))
                     .values(state="accepted", sender="s1", dispatched_at=last))
    pool = SenderPool(["s1"], rate=1.0, rng=random.Random(1), tz=ZoneInfo("UTC"), now=T0)
    seat = _seat(ledger, clock)
    gate = LeaseGate(seat, run_id, ["s1"])
    clock.now = T0 + timedelta(seconds=3)
    seat.tick()
    assert gate.sync(pool, clock.now, day_start=T0.replace(hour=0))
    # one interval after that send, not at once
    assert pool.senders["s1"].ready_at(clock.now) == last + timedelta(seconds=1)
    assert pool.senders["s1"].pace.daily.count(clock.now) == 1  # counted once
