"""Plan limits per session and per day of the sandbox clock: 429 + Retry-After, usage counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.service.requests import SEND_KINDS


class Clock:
    """A settable sandbox clock."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_daily_limit_gives_429_with_retry_after_until_midnight(make_sandbox, bodies):
    clock = Clock(datetime(2026, 3, 2, 23, 0, 0, tzinfo=UTC))
    box = make_sandbox(daily_message_limit=2, clock=clock)
    box.create_session("s1")
    assert box.send("text", bodies["text"]).status_code == 200
    assert box.send("image", bodies["image"]).status_code == 200
    refused = box.send("text", bodies["text"])
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "3600"
    assert refused.json()["success"] is False and refused.json()["statusCode"] == 429
    assert len(box.sends()) == 2

    limits = box.api("GET", "/api/v1/limits/s1").json()
    assert limits == {
        "success": True,
        "sessionId": "s1",
        "data": {
            "plan": "sandbox",
            "period": "day",
            "limits": {"messages": 2, "sms": 10_000, "voice": 1_000},
            "used": {"messages": 2, "sms": 0, "voice": 0},
            "resetsAt": "2026-03-03T00:00:00.000Z",
        },
    }
    # A new day on the sandbox clock resets the usage.
    clock.now += timedelta(hours=1, seconds=1)
    assert box.send("text", bodies["text"]).status_code == 200
    assert box.api("GET", "/api/v1/limits/s1").json()["data"]["used"]["messages"] == 1
    assert box.sends()[-1]["at"] == "2026-03-03T00:00:01.000Z"


def test_limits_are_per_session(make_sandbox, bodies):
    box = make_sandbox(daily_message_limit=1)
    box.create_session("s1")
    box.create_session("s2")
    assert box.send("text", bodies["text"]).status_code == 200
    assert box.send("text", bodies["text"]).status_code == 429
    assert box.send("text", {**bodies["text"], "sessionId": "s2"}).status_code == 200


def test_limit_can_be_lowered_at_run_time(sandbox, bodies):
    sandbox.create_session("s1")
    assert sandbox.send("text", bodies["text"]).status_code == 200
    sandbox.set_faults(daily_message_limit=1)
    response = sandbox.api("POST", SEND_KINDS["text"].path, json=bodies["text"])
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) >= 1
