"""A sender handed to another worker paces on from its previous holder's latest sends (pure
maths: fixed datetimes, seeded randomness): no 1 s window around the hand-off holds more
sends than the rate, and a jitter pause runs from the previous holder's last send."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from scheduler.dispatch.pacing import SenderPace
from scheduler.dispatch.senders import SenderPool

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)


def _send_greedily(pace: SenderPace, start: datetime, until: datetime) -> list[datetime]:
    """Every send the pace allows from ``start`` until ``until``, each as soon as allowed."""
    times: list[datetime] = []
    now = start
    while (at := pace.next_allowed(now)) < until:
        pace.record_send(at)
        times.append(at)
        now = at
    return times


def _most_in_one_second(times: list[datetime]) -> int:
    """The most sends in any window ``[t, t + 1 s)``."""
    ordered = sorted(times)
    return max(sum(1 for u in ordered[i:] if u - t < SECOND) for i, t in enumerate(ordered))


def _hand_off(resume: bool, gap_s: float) -> list[datetime]:
    """A sender at 3/s: one holder sends for 5 s, the next takes it ``gap_s`` after the
    last send and sends for 5 s more; every send of both, in order."""
    before = _send_greedily(SenderPace(3.0, rng=random.Random(1)), T0, T0 + 5 * SECOND)
    taker = SenderPace(3.0, rng=random.Random(2))
    if resume:
        taker.resume_from([before[-1]])
    start = before[-1] + timedelta(seconds=gap_s)
    return before + _send_greedily(taker, start, start + 5 * SECOND)


def test_a_sender_handed_over_never_goes_over_its_rate_in_any_second() -> None:
    for gap_s in (0.01, 0.2, 0.34, 0.9):
        times = _hand_off(resume=True, gap_s=gap_s)
        assert _most_in_one_second(times) <= 3, gap_s
        gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
        assert min(gaps) >= 1 / 3 - 1e-6, gap_s


def test_without_the_previous_holder_s_sends_the_hand_off_bunches() -> None:
    # the check above can fail: a taker starting from a full bucket sends at once
    times = _hand_off(resume=False, gap_s=0.01)
    assert _most_in_one_second(times) == 4


def test_the_jitter_pause_runs_from_the_previous_holder_s_last_send() -> None:
    last = T0 + 10 * SECOND
    pace = SenderPace(1.0, rng=random.Random(5), jitter=(2.0, 8.0))
    pace.resume_from([last - 3 * SECOND, last])
    pause = random.Random(5)
    pause.uniform(2.0, 8.0)  # the pause drawn after the older send
    expected = last + timedelta(seconds=pause.uniform(2.0, 8.0))
    assert abs((pace.next_allowed(last + SECOND) - expected).total_seconds()) < 1e-5
    assert pace.next_allowed(last + SECOND) >= last + 2 * SECOND


def test_resumed_sends_are_not_counted_twice_in_the_day() -> None:
    pace = SenderPace(1.0, rng=random.Random(1), daily_cap=10)
    pace.daily.set_count(T0, 4)  # the ledger's count of the day already holds them
    pace.resume_from([T0 - SECOND, T0])
    assert pace.daily.remaining(T0) == 6


def test_sends_older_than_the_pace_s_own_latest_change_nothing() -> None:
    pace = SenderPace(1.0, rng=random.Random(1))
    pace.record_send(T0)
    pace.resume_from([T0 - 5 * SECOND, T0 - SECOND])
    assert pace.next_allowed(T0) == T0 + SECOND
    # a later one spends a token: two sends half a second apart at 1/s, so the bucket
    # owes half a second more than the interval
    pace.resume_from([T0 + timedelta(milliseconds=500)])
    assert pace.next_allowed(T0 + SECOND) == T0 + 2 * SECOND


def test_a_pool_resumes_a_taken_sender_from_the_latest_of_its_recorded_sends() -> None:
    pool = SenderPool(["s1", "s2"], rate=2.0, rng=random.Random(1), tz=UTC, now=T0)
    last = T0 + 10 * SECOND
    pool.resume("s1", [last - SECOND, last])  # the lease's latest claim, the ledger's
    sender, ready = pool.pick(last + timedelta(milliseconds=100), sticky="s1")
    assert sender is None and ready == last + timedelta(milliseconds=500)
    pool.resume("s2", [])  # nothing recorded: free at once
    assert pool.senders["s2"].ready_at(last) == last
