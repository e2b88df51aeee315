"""Fair shares of senders among workers, and the leases a worker takes or gives up (pure,
fixed datetimes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.dispatch.shares import (
    TRIGGER_LEASE,
    fair_share,
    next_expiry,
    partition,
    plan_leases,
)
from scheduler.ledger.rows import LeaseRow

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
SENDERS = [f"s{i:02d}" for i in range(10)]


def _lease(sender: str, worker: str | None, expires_in_s: float) -> LeaseRow:
    return LeaseRow(sender, worker, NOW + timedelta(seconds=expires_in_s), 1, None)


def test_a_share_is_the_senders_divided_by_the_live_workers_rounded_up() -> None:
    assert fair_share(10, 1) == 10
    assert fair_share(10, 3) == 4
    assert fair_share(100, 3) == 34
    assert fair_share(2, 3) == 1
    assert fair_share(0, 2) == 0
    assert fair_share(5, 0) == 5  # nobody else live: this worker alone


def test_a_lone_worker_takes_every_free_sender() -> None:
    plan = plan_leases("w1", SENDERS, {}, live=["w1"], now=NOW)
    assert sorted(plan.take) == SENDERS and plan.give_up == []


def test_a_worker_takes_no_more_than_its_share_while_another_is_live() -> None:
    plan = plan_leases("w1", SENDERS, {}, live=["w1", "w2"], now=NOW)
    assert len(plan.take) == 5
    other = plan_leases("w2", SENDERS, {}, live=["w1", "w2"], now=NOW)
    # each tries the free senders in its own order: they do not all race for the same ones
    assert set(plan.take) != set(other.take)


def test_a_worker_over_its_share_gives_up_the_excess_when_another_arrives() -> None:
    leases = {s: _lease(s, "w1", 10) for s in SENDERS}
    plan = plan_leases("w1", SENDERS, leases, live=["w1", "w2", "w3"], now=NOW)
    assert len(plan.give_up) == 10 - 4 and plan.take == []
    newcomer = plan_leases("w3", SENDERS, leases, live=["w1", "w2", "w3"], now=NOW)
    assert newcomer.take == []  # nothing free until w1 gives some up


def test_leases_of_a_dead_worker_move_only_once_they_expire() -> None:
    leases = {s: _lease(s, "dead", 3) for s in SENDERS[:5]}
    leases |= {s: _lease(s, "w1", 10) for s in SENDERS[5:]}
    before = plan_leases("w1", SENDERS, leases, live=["w1"], now=NOW)
    assert before.take == []  # still held by the dead worker for 3 s
    after = plan_leases("w1", SENDERS, leases, live=["w1"], now=NOW + timedelta(seconds=3))
    assert sorted(after.take) == SENDERS[:5]


def test_released_leases_are_free_at_once() -> None:
    leases = {s: _lease(s, None, 0) for s in SENDERS}
    plan = plan_leases("w2", SENDERS, leases, live=["w2"], now=NOW - timedelta(seconds=30))
    assert sorted(plan.take) == SENDERS


def test_senders_no_run_wants_are_given_up_but_not_the_trigger_lease() -> None:
    leases = {"old": _lease("old", "w1", 5), TRIGGER_LEASE: _lease(TRIGGER_LEASE, "w1", 5)}
    plan = plan_leases("w1", ["new"], leases, live=["w1"], now=NOW)
    assert plan.give_up == ["old"] and plan.take == ["new"]


def test_partition_gives_each_live_worker_its_own_slot() -> None:
    assert partition("b", ["a", "b", "c"]) == (3, 1)
    assert partition("z", ["a"]) == (2, 1)


def test_the_free_senders_past_the_share_are_kept_in_order_for_a_lost_race() -> None:
    plan = plan_leases("w1", SENDERS, {}, live=["w1", "w2"], now=NOW)
    assert len(plan.take) == 5 and sorted(plan.take + plan.spare) == SENDERS


def test_a_worker_wakes_when_another_worker_s_lease_on_a_wanted_sender_runs_out() -> None:
    leases = {"s00": _lease("s00", "dead", 7), "s01": _lease("s01", "w2", 12),
              "s02": _lease("s02", "w1", 2),  # its own: renewed at its ticks
              "s03": _lease("s03", None, 0),  # free already
              "other": _lease("other", "w2", 1)}  # not wanted here
    assert next_expiry("w1", SENDERS, leases, NOW) == NOW + timedelta(seconds=7)
    assert next_expiry("w1", SENDERS, leases, NOW + timedelta(seconds=7)) \
        == NOW + timedelta(seconds=12)
    trigger = {TRIGGER_LEASE: _lease(TRIGGER_LEASE, "w2", 4)}  # leadership moves too
    assert next_expiry("w1", [], trigger, NOW) == NOW + timedelta(seconds=4)
    assert next_expiry("w1", SENDERS, {}, NOW) is None
