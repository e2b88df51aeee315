"""Pacing maths as pure functions: fixed datetimes and seeded randomness, never sleeping."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.dispatch.pacing import (
    DailyCounter,
    Quota,
    SenderPace,
    estimate_finish,
    mean_interval,
    sender_finish,
)
from scheduler.dispatch.windows import SendWindow

SP = ZoneInfo("America/Sao_Paulo")
T0 = datetime(2025, 3, 10, 10, 0, tzinfo=SP)  # a Monday


def test_mean_interval() -> None:
    assert mean_interval(0.5) == 2.0
    assert mean_interval(0.5, (2, 8)) == pytest.approx(5.0)  # floor at the jitter minimum
    assert mean_interval(0.1, (2, 8)) == 10.0  # the rate dominates
    assert mean_interval(1 / 3, (2, 8)) == pytest.approx((3 * 1 + (64 - 9) / 2) / 6)
    rng = random.Random(7)
    sampled = sum(max(3.0, rng.uniform(2, 8)) for _ in range(200_000)) / 200_000
    assert mean_interval(1 / 3, (2, 8)) == pytest.approx(sampled, rel=0.01)


def test_sender_pace_spaces_sends_by_the_rate() -> None:
    pace = SenderPace(0.5, rng=random.Random(1))
    times = []
    now = T0
    for _ in range(4):
        at = pace.next_allowed(now)
        pace.record_send(at)
        times.append(at)
        now = at
    assert [(t - T0).total_seconds() for t in times] == [0, 2, 4, 6]
    assert pace.next_allowed(T0 + timedelta(seconds=100)) == T0 + timedelta(seconds=100)


def test_sender_pace_burst_bucket_never_exceeds_its_size() -> None:
    pace = SenderPace(1.0, rng=random.Random(1), burst=3)
    sends = []
    now = T0
    for _ in range(6):
        at = pace.next_allowed(now)
        pace.record_send(at)
        sends.append((at - T0).total_seconds())
        now = at
    assert sends == [0, 0, 0, 1, 2, 3]


def test_sender_pace_jitter_is_seeded_and_bounded() -> None:
    def run(seed: int) -> list[float]:
        pace = SenderPace(10.0, rng=random.Random(seed), jitter=(2.0, 8.0))
        now, gaps, last = T0, [], None
        for _ in range(50):
            at = pace.next_allowed(now)
            if last is not None:
                gaps.append((at - last).total_seconds())
            pace.record_send(at)
            now = last = at
        return gaps

    gaps = run(42)
    assert gaps == run(42) and gaps != run(43)
    assert all(2.0 - 1e-6 <= g <= 8.0 + 1e-6 for g in gaps)


@given(st.floats(0.01, 50), st.integers(1, 5), st.lists(st.floats(0, 30), max_size=30))
def test_token_bucket_never_allows_more_than_burst_plus_rate_time(
    rate: float, burst: int, waits: list[float]
) -> None:
    pace = SenderPace(rate, rng=random.Random(0), burst=burst)
    now, sent = T0, []
    for wait in waits:
        at = pace.next_allowed(now + timedelta(seconds=wait))
        pace.record_send(at)
        sent.append(at)
        now = at
    for i, start in enumerate(sent):
        for j in range(i, len(sent)):
            span = (sent[j] - start).total_seconds()
            assert j - i + 1 <= burst + span * rate + 1e-6


def test_daily_cap_by_local_day() -> None:
    pace = SenderPace(1.0, rng=random.Random(1), daily_cap=2, tz=SP)
    late = datetime(2025, 3, 10, 23, 59, 58, tzinfo=SP)
    for _ in range(2):
        at = pace.next_allowed(late)
        pace.record_send(at)
        late = at
    assert pace.next_allowed(late) == datetime(2025, 3, 11, 0, 0, tzinfo=SP)
    counter = DailyCounter(3, SP)
    counter.record(datetime(2025, 3, 10, 23, 0, tzinfo=SP), 3)
    assert counter.remaining(datetime(2025, 3, 11, 2, 30, tzinfo=UTC)) == 0  # 23:30 local
    assert counter.remaining(datetime(2025, 3, 11, 3, 0, tzinfo=UTC)) == 3  # 00:00 local
    assert DailyCounter(None).remaining(T0) == float("inf")


def test_sender_finish_within_a_window_and_cap() -> None:
    window = SendWindow("09:00", "10:00", "mon-fri", SP)
    friday = datetime(2025, 3, 7, 9, 0, tzinfo=SP)
    done = sender_finish(50, start=friday, interval_s=60, window=window, daily_cap=30, tz=SP)
    assert done == datetime(2025, 3, 10, 9, 19, tzinfo=SP)
    # without the cap the window is the limit: 60 a day
    done = sender_finish(100, start=friday, interval_s=60, window=window, tz=SP)
    assert done == datetime(2025, 3, 10, 9, 39, tzinfo=SP)
    # starting before the window waits for it
    early = datetime(2025, 3, 7, 6, 0, tzinfo=SP)
    assert sender_finish(1, start=early, interval_s=60, window=window, tz=SP) == friday


def test_sender_finish_with_a_service_quota() -> None:
    resets = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)  # 09:00 local
    quota = Quota(limit=10, used=8, resets_at=resets)
    done = sender_finish(12, start=T0 - timedelta(hours=4), interval_s=1, quota=quota, tz=SP)
    # 2 left before the reset (06:00, 06:00:01), then 10 from 09:00:00 to 09:00:09
    assert done == datetime(2025, 3, 10, 9, 0, 9, tzinfo=SP)


def test_estimate_finish_senders_in_parallel_with_delays() -> None:
    window = SendWindow("09:00", "20:00", "mon-sat", SP)
    saturday = datetime(2025, 3, 15, 19, 59, tzinfo=SP)
    estimate = estimate_finish([3, 1, 0], start=saturday, rate=1 / 30, window=window, tz=SP)
    assert estimate.per_sender[2] is None
    assert estimate.per_sender[1] == saturday
    # 19:59:00 and 19:59:30 fit on Saturday; the third waits for Monday 09:00
    assert estimate.finish == datetime(2025, 3, 17, 9, 0, tzinfo=SP)
    delayed = estimate_finish(
        [1], start=saturday, rate=1.0, window=window, tz=SP, extra_delay_s=3600
    )
    assert delayed.finish == datetime(2025, 3, 17, 9, 0, tzinfo=SP)
    assert delayed.duration == timedelta(days=1, hours=13, minutes=1)


def test_estimate_uses_the_jitter_mean() -> None:
    estimate = estimate_finish([101], start=T0, rate=0.5, jitter=(2, 8))
    assert estimate.interval_s == pytest.approx(5.0)
    assert estimate.finish == T0 + timedelta(seconds=500)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        SenderPace(1.0, rng=random.Random()).next_allowed(datetime(2025, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        estimate_finish([1], start=datetime(2025, 1, 1), rate=1.0)
