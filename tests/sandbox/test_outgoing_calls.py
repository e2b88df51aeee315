"""The sandbox's outgoing-call state machine (``calls/place``, ``calls/stream``): ringing
first, then connected and one ended, or not answered instead (and nothing after it), the
connection layer's repeats when enabled, and seeded outcomes."""

from __future__ import annotations

import time
from typing import Any

from scheduler.service.call_models import PLACE_PATH, STREAM_PATH

TERMINAL = {"call.ended", "call.not_answered"}


def _knobs(box: Any, **change: Any) -> None:
    box.http.post("/sandbox/calls/knobs", json={"time_scale": 0.001, **change}) \
        .raise_for_status()


def _finished(box: Any, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The desk's calls once every one has emitted all its events (terminal, recording)."""
    deadline = time.monotonic() + timeout
    while True:
        calls = box.http.get("/sandbox/calls/outgoing").json()["calls"]
        done = [c for c in calls if TERMINAL & set(c["events"]) and (
            not (c["answered"] and c["record"]) or "call.audio" in c["events"])]
        if len(done) >= count:
            time.sleep(0.05)  # the repeats come a few milliseconds later
            return box.http.get("/sandbox/calls/outgoing").json()["calls"]
        assert time.monotonic() < deadline, f"calls unfinished: {calls}"
        time.sleep(0.01)


def _place(box: Any, session: str, count: int, path: str = STREAM_PATH) -> list[str]:
    ids = []
    for i in range(count):
        response = box.api("POST", path, json={"sessionId": session, "to": f"55119{i:08d}"})
        assert response.status_code == 200, response.text
        ids.append(response.json()["data"]["callId"])
    return ids


def test_never_two_terminal_outcomes_even_with_repeats(make_sandbox: Any,
                                                       webhook_sink: Any) -> None:
    box = make_sandbox(seed=7)
    box.create_session("s1", webhook_url=webhook_sink.url)
    _knobs(box, answer_rate=0.5, duplicate_rate=1.0)
    ids = _place(box, "s1", 16)
    calls = {c["callId"]: c for c in _finished(box, 16)}
    outcomes = set()
    for call_id in ids:
        events = calls[call_id]["events"]
        firsts = [e for e in events if not e.endswith("(repeat)")]
        assert firsts[0] == "call.ringing"
        terminals = [e for e in firsts if e in TERMINAL]
        assert len(terminals) == 1, events
        outcome = terminals[0]
        outcomes.add(outcome)
        if outcome == "call.ended":
            assert firsts[:3] == ["call.ringing", "call.connected", "call.ended"]
            assert firsts[3:] == ["call.audio"]  # stream mode: the recording after the end
        else:
            assert firsts == ["call.ringing", "call.not_answered"]  # no recording, nothing
        assert events.count(f"{outcome} (repeat)") == 1  # the connection layer repeated it
    assert outcomes == TERMINAL  # both outcomes occurred with answer_rate 0.5
    # the repeats really reach the webhook: twice each, with the same data
    received = webhook_sink.wait_for(
        lambda e: e["event"] in TERMINAL and e["data"]["callId"] in calls, count=32)
    by_call: dict[str, set[str]] = {}
    for envelope in received:
        by_call.setdefault(envelope["data"]["callId"], set()).add(envelope["event"])
    assert all(len(names) == 1 for names in by_call.values())


def test_not_answered_is_never_followed_by_a_recording(make_sandbox: Any,
                                                       webhook_sink: Any) -> None:
    box = make_sandbox()
    box.create_session("s1", webhook_url=webhook_sink.url)
    _knobs(box, answer_rate=0.0, duplicate_rate=0.5)
    ids = _place(box, "s1", 6)
    calls = _finished(box, 6)
    assert all("call.audio" not in c["events"] and "call.connected" not in c["events"]
               for c in calls)
    webhook_sink.wait_for(lambda e: e["event"] == "call.not_answered", count=6)
    time.sleep(0.05)
    assert not webhook_sink.of("call.audio")
    assert {e["data"]["callId"] for e in webhook_sink.of("call.not_answered")} == set(ids)


def test_outcomes_are_seeded(make_sandbox: Any) -> None:
    def outcomes() -> list[tuple[bool, float]]:
        box = make_sandbox(seed=42)
        box.create_session("s1")
        _knobs(box, answer_rate=0.5, duplicate_rate=0.0)
        _place(box, "s1", 8, PLACE_PATH)
        calls = box.http.get("/sandbox/calls/outgoing").json()["calls"]
        return [(c["answered"], c["ringS"]) for c in calls]

    first = outcomes()
    assert first == outcomes()
    assert {answered for answered, _ in first} == {True, False}


def test_knobs_are_checked(sandbox: Any) -> None:
    assert sandbox.http.post("/sandbox/calls/knobs",
                             json={"answer_rate": 2}).status_code == 400
    assert sandbox.http.post("/sandbox/calls/knobs",
                             json={"ring_s": [5, 1]}).status_code == 400
    assert sandbox.http.post("/sandbox/calls/knobs", json={"loud": True}).status_code == 400
    assert sandbox.http.get("/sandbox/calls/knobs").json()["answer_rate"] == 0.7
