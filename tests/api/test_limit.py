"""The failed-attempt limit on its own (a pure class on an injected monotonic clock)."""

from __future__ import annotations

from scheduler.api import auth
from scheduler.api.auth import FailureLimit
from tests.api.support import Ticks


def test_a_client_waits_a_minute_after_its_failures_and_others_do_not() -> None:
    ticks = Ticks()
    limit = FailureLimit(3, ticks)
    for _ in range(3):
        assert limit.retry_after("10.0.0.1") is None
        limit.failed("10.0.0.1")
    assert limit.retry_after("10.0.0.1") == 60.0
    assert limit.retry_after("10.0.0.2") is None  # per client
    ticks.now += 59.5
    assert limit.retry_after("10.0.0.1") == 1.0  # at least a second is asked
    ticks.now += 0.5
    assert limit.retry_after("10.0.0.1") is None


def test_the_table_of_clients_stays_bounded(monkeypatch) -> None:
    monkeypatch.setattr(auth, "MAX_CLIENTS", 5)
    ticks = Ticks()
    limit = FailureLimit(2, ticks)
    for i in range(4):
        limit.failed(f"old-{i}")
    ticks.now += 61  # their failures are over a minute old
    for i in range(20):
        limit.failed(f"new-{i}")
        ticks.now += 1
    assert len(limit._seen) <= 5
    limit.failed("new-19")
    assert limit.retry_after("new-19") is not None  # the newest stay counted
