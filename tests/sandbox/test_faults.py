"""Seeded fault injection: 5xx, 429, time-outs (some accepted), run-time changes."""

from __future__ import annotations

import httpx
import pytest

from scheduler.service.requests import SEND_KINDS
from tests.sandbox.support import TO

FAULTY = {"fail_rate": 0.25, "throttle_rate": 0.25, "timeout_rate": 0.0}


def run_sequence(box, n=30):
    box.create_session("s1")
    outcomes = []
    for i in range(n):
        response = box.send("text", {"sessionId": "s1", "to": TO, "text": f"m{i}"})
        outcomes.append((response.status_code, response.json().get("messageId")))
    return outcomes


def test_same_seed_same_faults_and_faulted_sends_are_not_recorded(make_sandbox):
    box = make_sandbox(seed=42, **FAULTY)
    first = run_sequence(box)
    assert run_sequence(make_sandbox(seed=42, **FAULTY)) == first
    assert {status for status, _ in first} == {200, 429, 500}
    other = run_sequence(make_sandbox(seed=43, **FAULTY))
    assert [s for s, _ in other] != [s for s, _ in first]
    accepted = [message_id for status, message_id in first if status == 200]
    assert [entry["messageId"] for entry in box.sends()] == accepted


def test_5xx_and_429_envelopes(sandbox):
    sandbox.create_session("s1")
    text = {"sessionId": "s1", "to": TO, "text": "x"}
    sandbox.set_faults(fail_rate=1.0)
    failed = sandbox.send("text", text)
    assert failed.status_code == 500
    assert failed.json()["success"] is False
    assert failed.json()["statusCode"] == 500
    sandbox.set_faults(fail_rate=0.0, throttle_rate=1.0)
    throttled = sandbox.send("text", text)
    assert throttled.status_code == 429
    assert throttled.headers["Retry-After"] == "1"
    assert throttled.json()["statusCode"] == 429
    assert sandbox.sends() == []


def test_timeout_not_accepted(make_sandbox, bodies):
    box = make_sandbox(timeout_rate=1.0, timeout_after_accept=0.0, timeout_hang_s=5.0)
    box.create_session("s1")
    with pytest.raises(httpx.ReadTimeout):
        box.api("POST", SEND_KINDS["text"].path, json=bodies["text"], timeout=0.3)
    assert box.sends() == []


def test_timeout_accepted_first_is_recorded_and_emitted(make_sandbox, webhook_sink, bodies):
    box = make_sandbox(timeout_rate=1.0, timeout_after_accept=1.0, timeout_hang_s=5.0)
    box.create_session("s1", webhook_url=webhook_sink.url)
    with pytest.raises(httpx.ReadTimeout):
        box.api("POST", SEND_KINDS["text"].path, json=bodies["text"], timeout=0.3)
    [entry] = box.sends()
    [event] = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent")
    assert event["data"]["id"].lower() == entry["messageId"].lower()


def test_timeout_answers_504_to_a_patient_client(make_sandbox, bodies):
    box = make_sandbox(timeout_rate=1.0, timeout_after_accept=0.0, timeout_hang_s=0.05)
    box.create_session("s1")
    response = box.send("text", bodies["text"])
    assert response.status_code == 504
    assert response.json()["statusCode"] == 504


def test_throttle_burst_started_mid_run(sandbox, bodies):
    sandbox.create_session("s1")
    assert sandbox.send("text", bodies["text"]).status_code == 200
    knobs = sandbox.set_faults(throttle_rate=1.0)
    assert knobs["throttle_rate"] == 1.0
    assert [sandbox.send("text", bodies["text"]).status_code for _ in range(3)] == [429] * 3
    sandbox.set_faults(throttle_rate=0.0)
    assert sandbox.send("text", bodies["text"]).status_code == 200
    assert len(sandbox.sends()) == 2


def test_faults_endpoint_reads_and_validates(sandbox):
    knobs = sandbox.http.get("/sandbox/faults").json()
    assert "api_key" not in knobs and "seed" not in knobs
    assert knobs["fail_rate"] == 0.0
    changed = sandbox.set_faults(latency_ms="1-3", webhook_reorder=True)
    assert changed["latency_ms"] == [1.0, 3.0]
    assert changed["webhook_reorder"] is True
    for bad, field in [
        ({"fail_rate": 2}, "fail_rate"),
        ({"api_key": "x"}, "api_key"),
        ({"latency_ms": "5-x"}, "latency_ms"),
        ({"nope": 1}, "nope"),
    ]:
        response = sandbox.http.post("/sandbox/faults", json=bad)
        assert response.status_code == 400
        assert field in response.json()["error"]
    assert sandbox.http.get("/sandbox/faults").json() == changed


def test_latency_still_answers(make_sandbox, bodies):
    box = make_sandbox(latency_ms=(1, 5))
    box.create_session("s1")
    assert box.send("text", bodies["text"]).status_code == 200
