"""The login limiter and the session store on a fixed clock (pure: no server, no sleeping)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler.dashboard.auth.ratelimit import RateLimiter, attempt_wait
from scheduler.dashboard.auth.sessions import SessionStore
from tests.factories import FakeClock


def test_five_attempts_a_minute_then_a_wait_until_the_oldest_leaves(clock: FakeClock) -> None:
    limiter = RateLimiter(5, timedelta(minutes=1), clock=clock)
    waits = []
    for _ in range(5):
        waits.append(limiter.hit("10.0.0.1"))
        clock.now += timedelta(seconds=10)
    assert waits == [0] * 5
    assert limiter.hit("10.0.0.1") == 10  # the first was 50 s ago
    assert limiter.hit("10.0.0.2") == 0  # another key has its own count
    clock.now += timedelta(seconds=10)
    assert limiter.hit("10.0.0.1") == 0  # the first left the window
    assert limiter.hit("10.0.0.1") == 10


def test_a_refused_attempt_does_not_lengthen_the_wait(clock: FakeClock) -> None:
    limiter = RateLimiter(2, timedelta(seconds=30), clock=clock)
    limiter.hit("ana")
    limiter.hit("ana")
    for _ in range(20):
        assert limiter.hit("ana") > 0
        clock.now += timedelta(seconds=1)
    clock.now += timedelta(seconds=10)
    assert limiter.hit("ana") == 0


def test_a_wait_is_whole_seconds_rounded_up(clock: FakeClock) -> None:
    limiter = RateLimiter(1, timedelta(seconds=60), clock=clock)
    limiter.hit("k")
    clock.now += timedelta(seconds=59, milliseconds=100)
    assert limiter.retry_after("k") == 1
    clock.now += timedelta(milliseconds=900)
    assert limiter.retry_after("k") == 0


def test_the_table_forgets_quiet_keys_and_stays_bounded(clock: FakeClock) -> None:
    limiter = RateLimiter(5, timedelta(minutes=1), clock=clock, max_keys=100)
    for i in range(1000):
        limiter.hit(f"made-up-name-{i}")
    assert len(limiter) == 100
    clock.now += timedelta(minutes=2)
    limiter.retry_after("made-up-name-999")
    assert len(limiter) == 99


def test_an_attempt_counts_against_every_key_or_none(clock: FakeClock) -> None:
    by_ip = RateLimiter(3, timedelta(minutes=1), clock=clock)
    by_name = RateLimiter(3, timedelta(minutes=1), clock=clock)
    for name in ("a", "b", "c"):
        assert attempt_wait((by_ip, "1.2.3.4"), (by_name, name)) == 0
    assert attempt_wait((by_ip, "1.2.3.4"), (by_name, "d")) == 60
    assert by_name.retry_after("d") == 0 and len(by_name) == 3  # "d" was not recorded


def test_a_limit_needs_a_count_and_a_window(clock: FakeClock) -> None:
    with pytest.raises(ValueError):
        RateLimiter(0, timedelta(minutes=1), clock=clock)
    with pytest.raises(ValueError):
        RateLimiter(5, timedelta(0), clock=clock)


def test_a_session_lives_while_used_and_never_past_its_lifetime(clock: FakeClock) -> None:
    store = SessionStore(clock=clock, idle=timedelta(hours=1), lifetime=timedelta(hours=3))
    token, session = store.create("ana")
    for _ in range(3):  # used every 50 minutes
        clock.now += timedelta(minutes=50)
        assert store.get(token) is session
    clock.now += timedelta(minutes=50)  # 3 h 20 since it began
    assert store.get(token) is None and len(store) == 0
    token, _ = store.create("ana")
    clock.now += timedelta(hours=1)
    assert store.get(token) is None


def test_sessions_have_their_own_random_tokens_and_are_ended_by_logout(
        clock: FakeClock) -> None:
    store = SessionStore(clock=clock)
    (one, first), (two, second) = store.create("ana"), store.create("ana")
    assert one != two and first.csrf != second.csrf and len(one) >= 40
    store.end(one)
    assert store.get(one) is None and store.get(two) is second
    assert store.get(None) is None and store.get("") is None and store.get("forged") is None


def test_the_store_keeps_no_token_and_anonymous_sessions_never_push_out_logins(
        clock: FakeClock) -> None:
    store = SessionStore(clock=clock, max_anonymous=10)
    token, _ = store.create("ana")
    assert token not in repr(vars(store))
    anonymous = [store.create()[0] for _ in range(50)]
    assert len(store) == 11
    assert store.get(token) is not None
    assert store.get(anonymous[0]) is None and store.get(anonymous[-1]) is not None
