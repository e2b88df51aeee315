"""Two runs dispatched at once through one session (two campaigns in ``campaign serve``)
pace it together: its gaps are never shorter than its rate, and its day is counted once
(pure pacing maths, fixed datetimes)."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

from scheduler.dispatch.senders import SenderPool
from scheduler.dispatch.shared_senders import SharedSenders

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _pool(shared: SharedSenders | None, run_id: int, *, daily_cap: int | None = None
          ) -> SenderPool:
    pool = SenderPool(["s1"], rate=1.0, rng=random.Random(run_id), daily_cap=daily_cap,
                      tz=UTC, now=T0)
    if shared is not None:
        shared.join(run_id)
        pool.share(shared, run_id)
    return pool


def _claims(pools: list[SenderPool], seconds: float, step_s: float = 0.05
            ) -> list[tuple[datetime, int]]:
    """Every pool picks whenever it may, over ``seconds``, the first to look changing at
    each step (as two dispatchers' loops wake in either order): (claim time, pool)."""
    claims = []
    now, order = T0, random.Random(7)
    while now < T0 + timedelta(seconds=seconds):
        for i in order.sample(range(len(pools)), len(pools)):
            pool = pools[i]
            state, ready = pool.pick(now)
            if state is not None:
                pool.on_claim(state, ready or now, now)
                claims.append((now, i))
        now += timedelta(seconds=step_s)
    return claims


def test_two_runs_on_one_session_keep_its_rate_between_them() -> None:
    shared = SharedSenders()
    claims = _claims([_pool(shared, 1), _pool(shared, 2)], 10)
    gaps = [(b - a).total_seconds() for (a, _), (b, _) in itertools.pairwise(claims)]
    assert min(gaps) >= 1.0 - 1e-9, gaps  # 1/s for the session, not 1/s per run
    assert 9 <= len(claims) <= 11
    assert {i for _at, i in claims} == {0, 1}  # both runs send through it


def test_without_sharing_each_run_would_send_at_its_own_rate() -> None:
    claims = _claims([_pool(None, 1), _pool(None, 2)], 10)
    assert len(claims) >= 19  # what the shared record prevents: 2/s through one session


def test_the_daily_cap_counts_both_runs_sends() -> None:
    shared = SharedSenders()
    claims = _claims([_pool(shared, 1, daily_cap=5), _pool(shared, 2, daily_cap=5)], 30)
    assert len(claims) == 5


def test_a_run_alone_is_not_slowed_by_the_record() -> None:
    shared = SharedSenders()
    claims = _claims([_pool(shared, 1)], 10)
    assert 10 <= len(claims) <= 11


def test_a_run_that_starts_after_another_ended_paces_from_its_last_send() -> None:
    shared = SharedSenders()
    first = _pool(shared, 1)
    state, ready = first.pick(T0)
    assert state is not None
    first.on_claim(state, ready or T0, T0)
    shared.leave(1)  # its dispatcher stopped: only the sender's totals stay
    second = _pool(shared, 2)
    assert second.pick(T0 + timedelta(seconds=0.5))[0] is None  # 1/s since that send
    assert second.pick(T0 + timedelta(seconds=1))[0] is not None
    assert shared.others(2, "s1") == (T0, 1)
