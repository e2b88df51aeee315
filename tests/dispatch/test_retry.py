"""Retry verdicts, back-off and the sender pool's reactions, as pure functions."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.dispatch.dispatcher.run_state import SendOutcome
from scheduler.dispatch.dispatcher.settling import settle
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.retry import Verdict, backoff_delay, classify, retry_delay
from scheduler.dispatch.senders import SenderPool
from scheduler.ledger.rows import DueDelivery
from scheduler.service.exceptions import (
    Forbidden,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceTimeout,
    ServiceUnreachable,
    SessionNotFound,
    Unauthorized,
)
from scheduler.settings.engine import EngineSettings

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("error", "verdict"), [
    (Unauthorized(401, "Invalid API key"), Verdict.STOP_RUN),
    (Forbidden(403, "no rights"), Verdict.STOP_RUN),
    (RateLimited(429, "slow down", retry_after=3), Verdict.THROTTLED),
    (ServerError(503, "busy"), Verdict.RETRY),
    (ServiceTimeout("read time-out"), Verdict.AMBIGUOUS),
    (ServiceUnreachable("reset mid-request"), Verdict.AMBIGUOUS),
    (ServiceUnreachable("connection refused", maybe_applied=False), Verdict.RETRY),
    (SessionNotFound(404, "Session not found"), Verdict.SENDER_DOWN),
    (RequestRejected(409, "Session not connected"), Verdict.SENDER_DOWN),
    (RequestRejected(400, "Invalid request body: text: unknown field"), Verdict.FAIL),
])
def test_each_error_gets_its_verdict(error, verdict) -> None:
    assert classify(error) is verdict


def test_backoff_doubles_up_to_the_cap_with_jitter_inside_the_band() -> None:
    rng = random.Random(1)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0), (20, 300.0)]:
        delays = [backoff_delay(attempt, rng, base_s=1.0, cap_s=300.0) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert max(delays) - min(delays) > ceiling / 10  # really jittered


def test_retry_after_wins_for_a_429() -> None:
    rng = random.Random(1)
    back_off = {"base_s": 1.0, "cap_s": 300.0}
    assert retry_delay(Verdict.THROTTLED, 1, rng, retry_after=17.0, **back_off) == 17.0
    assert retry_delay(Verdict.RETRY, 1, rng, retry_after=17.0, **back_off) <= 1.0


def _pool(*names: str) -> SenderPool:
    return SenderPool(list(names), rate=1.0, rng=random.Random(1), tz=UTC, now=NOW,
                      cooloff_s=60, failure_threshold=2)


def _row(i: int, attempts: int = 0) -> DueDelivery:
    return DueDelivery(i, i, 0, f"55119000000{i:02d}", "/api/v1/messages/send/text",
                       "{}", None, "BR", attempts)


def test_settle_sorts_a_mixed_batch() -> None:
    pool = _pool("s1", "s2")
    s1, s2 = pool.senders["s1"], pool.senders["s2"]
    batch = [
        SendOutcome(_row(1), s1, message_id="ABC"),
        SendOutcome(_row(2), s1, error=RequestRejected(400, "bad body")),
        SendOutcome(_row(3), s1, error=ServiceTimeout("t")),
        SendOutcome(_row(4), s2, error=SessionNotFound(404, "Session not found")),
        SendOutcome(_row(5, attempts=4), s1, error=ServerError(500, "boom")),
        SendOutcome(_row(6), s1, error=RateLimited(429, "slow", retry_after=5)),
    ]
    out = settle(batch, pool, DispatchOptions(senders=("s1", "s2")),
                 random.Random(1), NOW, events_received=False)
    assert out.accepted == [(1, "ABC")]
    assert [f[0] for f in out.failed] == [2, 5]
    assert "gave up after 5 attempts" in out.failed[1][2]
    assert [u[0] for u in out.unknown] == [3]  # at-most-once, nobody to prove it
    # the 429 blocks s1 for its Retry-After; s2 is down too (its session), so no sender
    # is free to take the row at once: it waits out the Retry-After
    assert {r[0]: r[1] for r in out.retries} == {4: NOW, 6: NOW + timedelta(seconds=5)}
    assert pool.senders["s2"].down_reason is not None  # its work goes to s1
    assert s1.slowdown == 2.0 and s1.blocked_until == NOW + timedelta(seconds=5)
    assert pool.pick(NOW + timedelta(seconds=6))[0] is s1


def test_a_timeout_waits_for_events_when_they_can_come() -> None:
    pool = _pool("s1")
    options = DispatchOptions(senders=("s1",), engine=EngineSettings(verify_grace_s=30))
    out = settle([SendOutcome(_row(1), pool.senders["s1"], error=ServiceTimeout("t"))], pool,
                 options, random.Random(1), NOW, events_received=True)
    assert out.verifying == [(1, NOW + timedelta(seconds=30), "t; verifying against events")]
    assert out.unknown == [] and out.retries == []


def test_a_refused_key_stops_the_run() -> None:
    pool = _pool("s1")
    out = settle([SendOutcome(_row(1), pool.senders["s1"], error=Unauthorized(401, "Invalid"))],
                 pool, DispatchOptions(senders=("s1",)), random.Random(1), NOW,
                 events_received=False)
    assert out.stop_reason is not None and "refused the API key" in out.stop_reason
    assert out.retries == [(1, NOW, "HTTP 401: Invalid")]


def test_slowdown_recovers_gradually_after_429s() -> None:
    pool = _pool("s1")
    state = pool.senders["s1"]
    pool.on_throttled(state, NOW, None)
    pool.on_throttled(state, NOW, None)
    assert state.slowdown == 4.0 and state.pace.rate == pytest.approx(0.25)
    for _ in range(5):
        pool.on_accepted(state)
    assert 1.0 < state.slowdown < 4.0
    for _ in range(50):
        pool.on_accepted(state)
    assert state.slowdown == 1.0 and state.pace.rate == 1.0
