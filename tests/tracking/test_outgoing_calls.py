"""Outgoing WhatsApp calls in tracking: every event stored once however the connection layer
repeats it, exactly one terminal outcome a call, and no recording for a call not answered."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.call_events import call_outcome
from tests.tracking.support import table, wait_until

TERMINAL = {"call.ended", "call.not_answered"}


def _call_rows(ledger: Ledger) -> list[tuple[str, str, str | None]]:
    """(callId, event, result) of the stored outgoing-call events."""
    out = []
    for row in table(ledger, "events"):
        if row["event"] in (*TERMINAL, "call.ringing", "call.connected", "call.audio"):
            out.append((json.loads(row["payload"])["data"]["callId"], row["event"],
                        row["result"]))
    return out


def _emitted_all(call: dict[str, Any]) -> bool:
    """Whether the sandbox emitted every event of ``call`` and the repeat of its last one."""
    last = "call.audio" if call["answered"] and call["record"] else \
        ("call.ended" if call["answered"] else "call.not_answered")
    return f"{last} (repeat)" in call["events"]


def _envelope(event: str, call_id: str, at: str, **data: Any) -> dict[str, Any]:
    return {"event": event, "sessionId": "s1", "timestamp": at,
            "data": {"callId": call_id, **data}}


def test_repeated_events_of_sandbox_calls_are_stored_once(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    sandbox = make_sandbox(seed=3)
    receiver = make_receiver(tledger)
    sandbox.create_session("s1", webhook_url=receiver.url)
    sandbox.http.post("/sandbox/calls/knobs", json={
        "time_scale": 0.001, "answer_rate": 0.5, "duplicate_rate": 1.0}).raise_for_status()
    ids = [sandbox.api("POST", "/api/v1/calls/stream",
                       json={"sessionId": "s1", "to": f"55219{i:08d}"}).json()["data"]["callId"]
           for i in range(10)]
    desk = wait_until(lambda: (calls := sandbox.http.get("/sandbox/calls/outgoing")
                               .json()["calls"]) and all(_emitted_all(c) for c in calls)
                      and calls)
    expected = sum(len([e for e in c["events"] if not e.endswith("(repeat)")]) for c in desk)
    wait_until(lambda: len(_call_rows(tledger)) >= expected)
    time.sleep(0.2)  # the repeats have arrived too (and were not stored)
    rows = _call_rows(tledger)
    assert len(rows) == expected
    assert max(Counter((c, e) for c, e, _ in rows).values()) == 1  # every event once
    terminals = Counter(c for c, e, _ in rows if e in TERMINAL)
    assert terminals == dict.fromkeys(ids, 1)  # one terminal outcome per call
    seen = set()
    for call_id in ids:
        outcome = call_outcome(TrackingStore(tledger), "s1", call_id)
        seen.add(outcome.status)
        if outcome.status == "not_answered":
            assert outcome.reason == "no_answer" and outcome.recording_url is None
        else:
            assert outcome.status == "ended" and outcome.reason == "hangup"
            assert outcome.recording_url and outcome.recording_url.endswith("/full.wav")
            assert outcome.duration_ms is not None
    assert seen == {"ended", "not_answered"}
    # the webhook really got the repeats
    assert len([w for w in sandbox.webhooks() if w["event"] in TERMINAL]) >= 2 * len(ids)


def test_a_second_terminal_event_is_not_a_second_outcome(
        tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    peer = {"peerPn": "5521911112222@s.whatsapp.net"}
    posts = [
        _envelope("call.ringing", "C1", "2026-11-23T08:00:00.000Z", state="ringing", **peer),
        _envelope("call.connected", "C1", "2026-11-23T08:00:03.000Z", state="active", **peer),
        _envelope("call.ended", "C1", "2026-11-23T08:00:20.000Z", state="idle",
                  reason="hangup", **peer),
        # the connection layer's repeat: another envelope time
        _envelope("call.ended", "C1", "2026-11-23T08:00:20.004Z", state="idle",
                  reason="hangup", **peer),
        _envelope("call.not_answered", "C1", "2026-11-23T08:00:21.000Z", state="idle",
                  reason="no_answer", **peer),
    ]
    for post in posts:
        assert receiver.post(post).status_code < 300
    rows = _call_rows(tledger)
    # no delivery holds C1 (no campaign placed it): kept unmatched, for a late match
    assert [(e, r) for _, e, r in rows] == [
        ("call.ringing", "unmatched"), ("call.connected", "unmatched"),
        ("call.ended", "unmatched")]
    assert [r["number"] for r in table(tledger, "events")] == ["5521911112222"] * 3
    outcome = call_outcome(TrackingStore(tledger), "s1", "C1")
    assert (outcome.status, outcome.reason, outcome.recording_url) == ("ended", "hangup", None)


def test_a_recording_after_not_answered_is_ignored(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    receiver.post(_envelope("call.ringing", "C2", "2026-11-23T08:00:00.000Z", state="ringing"))
    receiver.post(_envelope("call.not_answered", "C2", "2026-11-23T08:00:30.000Z",
                            state="idle", reason="no_answer"))
    url = "https://files.example.com/C2/full.wav"
    receiver.post(_envelope("call.audio", "C2", "2026-11-23T08:00:31.000Z",
                            files={"full": url, "sender": None, "recipient": None}, url=url,
                            durationMs=1000, sizeBytes=32044, mimetype="audio/wav"))
    rows = _call_rows(tledger)
    assert rows[-1] == ("C2", "call.audio",
                        "ignored: a recording of a call that was not answered")
    outcome = call_outcome(TrackingStore(tledger), "s1", "C2")
    assert (outcome.status, outcome.recording_url) == ("not_answered", None)
    assert call_outcome(TrackingStore(tledger), "s1", "nope").status == "unknown"


def test_live_audio_chunks_are_counted_never_stored(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    for seq in range(3):
        answer = receiver.post(_envelope("call.audio", "C3", "2026-11-23T08:00:01.000Z",
                                         seq=seq, sampleRate=16000, channels=1,
                                         encoding="pcm_s16le", data="AAAA", final=seq == 2))
        assert answer.status_code == 200
    bad = receiver.post(_envelope("call.audio", "C3", "2026-11-23T08:00:01.000Z", seq="x",
                                  data="AAAA"))
    assert bad.status_code == 422  # parsed by the client's models, a wrong chunk refused
    assert table(tledger, "events") == []
    health = receiver.http.get(f"{receiver.base_url}/health").json()
    assert health["audio_chunks"] == 3
