"""Worker registry and sender leases in the ledger: one conditional statement each, on
SQLite and PostgreSQL (fixed datetimes)."""

from __future__ import annotations

from datetime import timedelta

from scheduler.ledger import access
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.runs import Ledger
from tests.factories import T0

LEASE = timedelta(seconds=5)


def test_a_sender_is_held_by_one_worker_until_it_expires(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        got = lq.acquire(conn, "s1", "w1", T0, T0 + LEASE)
        assert got is not None and got.worker == "w1" and got.epoch == 1
        assert lq.acquire(conn, "s1", "w2", T0 + timedelta(seconds=4), T0 + 2 * LEASE) is None
        taken = lq.acquire(conn, "s1", "w2", T0 + LEASE, T0 + 2 * LEASE)
        assert taken is not None and taken.worker == "w2" and taken.epoch == 2
        (row,) = lq.all_leases(conn)
    assert (row.worker, row.epoch) == ("w2", 2)


def test_renew_keeps_unexpired_leases_only(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        lq.acquire(conn, "s1", "w1", T0, T0 + LEASE)
        lq.acquire(conn, "s2", "w1", T0, T0 + timedelta(seconds=1))
        renewed = lq.renew(conn, "w1", T0 + timedelta(seconds=2), T0 + 2 * LEASE)
    assert renewed == {"s1"}  # s2 lapsed: it may be another worker's by now


def test_the_fence_answers_the_senders_still_held_and_stamps_their_last_claim(
        ledger: Ledger) -> None:
    at = T0 + timedelta(seconds=1)
    with access.transaction(ledger.engine) as conn:
        lq.acquire(conn, "s1", "w1", T0, T0 + LEASE)
        lq.acquire(conn, "s2", "w2", T0, T0 + LEASE)
        assert lq.fence(conn, "w1", ["s1", "s2", "s3"], at) == {"s1"}
        rows = {r.sender: r for r in lq.all_leases(conn)}
    assert rows["s1"].last_sent_at == at and rows["s2"].last_sent_at is None


def test_a_released_sender_is_free_at_once_and_keeps_its_last_claim(ledger: Ledger) -> None:
    at = T0 + timedelta(seconds=1)
    with access.transaction(ledger.engine) as conn:
        lq.acquire(conn, "s1", "w1", T0, T0 + LEASE)
        lq.fence(conn, "w1", ["s1"], at)
        lq.release(conn, "w2", ["s1"], at)  # not w2's: nothing happens
        assert lq.acquire(conn, "s1", "w2", at, at + LEASE) is None
        lq.release(conn, "w1", ["s1"], at)
        taken = lq.acquire(conn, "s1", "w2", at, at + LEASE)
    assert taken is not None and taken.last_sent_at == at


def test_live_workers_are_those_with_a_fresh_heartbeat_that_did_not_stop(ledger: Ledger) -> None:
    with access.transaction(ledger.engine) as conn:
        for name in ("w1", "w2", "w3"):
            lq.register_worker(conn, name, "host", 1, T0)
        lq.beat_worker(conn, "w1", T0 + timedelta(seconds=10))
        lq.beat_worker(conn, "w2", T0 + timedelta(seconds=10))
        lq.acquire(conn, "s1", "w2", T0, T0 + LEASE)
        lq.stop_worker(conn, "w2", T0 + timedelta(seconds=11))
        live = lq.live_workers(conn, since=T0 + timedelta(seconds=5))
        (lease,) = lq.all_leases(conn)
    assert [w.id for w in live] == ["w1"]
    assert lease.worker is None  # a stopped worker gives its leases up
