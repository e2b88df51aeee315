"""WhatsApp calls through the client and a real sandbox: event messages (``send-event``),
outgoing calls (``place``, ``stream``) and their events, body checks, ``cloud_api`` refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from scheduler.service.call_models import SEND_EVENT_PATH, STREAM_PATH
from scheduler.service.client import ServiceClient
from scheduler.service.event_data import AudioChunk, Recording
from scheduler.service.events import CallAudioEvent, CallStateEvent, parse_event
from scheduler.service.exceptions import InvalidRequest, RequestRejected

SESSION = "chamadas"
TO = "5511988887777"


@pytest.fixture
async def client(sandbox: Any, webhook_sink: Any) -> AsyncIterator[ServiceClient]:
    """A client of the test sandbox, with a connected session posting to the sink."""
    sandbox.create_session(SESSION, webhook_url=webhook_sink.url)
    async with ServiceClient(sandbox.base_url, sandbox.api_key, timeout_s=5) as c:
        yield c


def knobs(sandbox: Any, **change: Any) -> None:
    response = sandbox.http.post("/sandbox/calls/knobs", json={"time_scale": 0.001, **change})
    response.raise_for_status()


def call_events(sink: Any, call_id: str, count: int) -> list[dict[str, Any]]:
    return sink.wait_for(lambda e: str(e.get("event", "")).startswith("call.")
                         and e["data"].get("callId") == call_id, count=count)


async def test_send_event_round_trip(client: ServiceClient, sandbox: Any) -> None:
    when = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
    result = await client.send_call_event(SESSION, TO, title="Reunião de boas-vindas",
                                          scheduled_time=when, call_type="video",
                                          create_call_link=True)
    assert result.success is True and result.messageId
    [sent] = [s for s in sandbox.sends() if s["path"] == SEND_EVENT_PATH]
    assert sent["body"] == {"sessionId": SESSION, "to": TO, "title": "Reunião de boas-vindas",
                            "scheduledTime": "2026-12-01T15:30:00+00:00", "callType": "video",
                            "createCallLink": True}


async def test_send_event_bodies_are_checked_before_sending(client: ServiceClient,
                                                            sandbox: Any) -> None:
    with pytest.raises(InvalidRequest, match="callType"):
        await client.send_call_event(SESSION, TO, call_type="hologram")
    with pytest.raises(InvalidRequest, match="not both"):
        await client.send_call_event(SESSION, TO, create_call_link=True,
                                     custom_call_link_url="https://meet.example.com/x")
    with pytest.raises(InvalidRequest, match="customCallLinkUrl"):
        await client.send_call_event(SESSION, TO, custom_call_link_url="meet.example.com/x")
    with pytest.raises(InvalidRequest, match="to"):
        await client.send_call_event(SESSION, "")
    assert [s for s in sandbox.sends() if s["path"] == SEND_EVENT_PATH] == []


@pytest.mark.parametrize("body", [
    {"sessionId": SESSION, "to": TO, "callType": "hologram"},
    {"sessionId": SESSION},
    {"sessionId": SESSION, "to": TO, "createCallLink": True,
     "customCallLinkUrl": "https://meet.example.com/x"},
    {"sessionId": SESSION, "to": TO, "colour": "blue"},
])
async def test_the_sandbox_refuses_bad_send_event_bodies(client: ServiceClient, sandbox: Any,
                                                         body: dict[str, Any]) -> None:
    response = sandbox.api("POST", SEND_EVENT_PATH, json=body)
    assert response.status_code == 400
    assert response.json()["success"] is False
    assert [s for s in sandbox.sends() if s["path"] == SEND_EVENT_PATH] == []


async def test_a_placed_call_that_is_answered(client: ServiceClient, sandbox: Any,
                                              webhook_sink: Any) -> None:
    knobs(sandbox, answer_rate=1.0, duplicate_rate=0.0)
    placed = await client.place_call(SESSION, TO)
    assert placed.success is True and placed.data.mode == "place"
    assert placed.data.to == f"{TO}@s.whatsapp.net"
    events = call_events(webhook_sink, placed.call_id, 3)
    parsed = [parse_event(e) for e in events]
    assert all(isinstance(p, CallStateEvent) for p in parsed)
    states = {p.event: p.data.state for p in parsed if isinstance(p, CallStateEvent)}
    assert states == {"call.ringing": "ringing", "call.connected": "active",
                      "call.ended": "idle"}
    ended = next(e for e in events if e["event"] == "call.ended")
    assert ended["data"]["reason"] == "hangup"
    assert not webhook_sink.of("call.audio")  # place mode records nothing


async def test_a_streamed_call_ends_with_its_recording(client: ServiceClient, sandbox: Any,
                                                       webhook_sink: Any) -> None:
    knobs(sandbox, answer_rate=1.0, duplicate_rate=0.0)
    placed = await client.stream_call(SESSION, TO)
    assert placed.data.mode == "stream" and placed.data.record is True
    events = call_events(webhook_sink, placed.call_id, 4)
    [audio] = [parse_event(e) for e in events if e["event"] == "call.audio"]
    assert isinstance(audio, CallAudioEvent) and isinstance(audio.data, Recording)
    recording = audio.data
    assert recording.mimetype == "audio/wav" and recording.durationMs
    assert recording.files and recording.files.sender and recording.files.recipient
    assert recording.full_url == recording.url == recording.files.full
    wav = httpx.get(recording.full_url, timeout=5)
    assert wav.status_code == 200 and wav.content[:4] == b"RIFF"


async def test_a_call_nobody_answers(client: ServiceClient, sandbox: Any,
                                     webhook_sink: Any) -> None:
    knobs(sandbox, answer_rate=0.0, duplicate_rate=0.0)
    placed = await client.stream_call(SESSION, TO)
    events = call_events(webhook_sink, placed.call_id, 2)
    assert sorted(e["event"] for e in events) == ["call.not_answered", "call.ringing"]
    [missed] = [e for e in events if e["event"] == "call.not_answered"]
    assert missed["data"]["state"] == "idle" and missed["data"]["reason"] == "no_answer"
    desk = sandbox.http.get("/sandbox/calls/outgoing").json()["calls"]
    [call] = [c for c in desk if c["callId"] == placed.call_id]
    assert call["events"] == ["call.ringing", "call.not_answered"]  # nothing follows it


async def test_stream_without_recording(client: ServiceClient, sandbox: Any,
                                        webhook_sink: Any) -> None:
    knobs(sandbox, answer_rate=1.0, duplicate_rate=0.0)
    placed = await client.stream_call(SESSION, TO, record=False)
    assert placed.data.record is False
    call_events(webhook_sink, placed.call_id, 3)
    desk = sandbox.http.get("/sandbox/calls/outgoing").json()["calls"]
    [call] = [c for c in desk if c["callId"] == placed.call_id]
    assert "call.audio" not in call["events"]
    sent = [s for s in sandbox.sends() if s["path"] == STREAM_PATH]
    assert sent[-1]["body"] == {"sessionId": SESSION, "to": TO, "record": False}


async def test_calls_are_refused_on_cloud_api_sessions(client: ServiceClient,
                                                       sandbox: Any) -> None:
    sandbox.state.world.sessions[SESSION].provider = "cloud_api"  # how such a session looks
    for attempt in (client.place_call(SESSION, TO), client.stream_call(SESSION, TO),
                    client.send_call_event(SESSION, TO, title="x")):
        with pytest.raises(RequestRejected, match="not available on cloud_api"):
            await attempt
    with pytest.raises(RequestRejected, match="not available on cloud_api"):
        await client.reject_call(SESSION, "C1", "1@lid")
    assert sandbox.sends() == []


async def test_calls_on_an_unknown_or_disconnected_session(client: ServiceClient,
                                                           sandbox: Any) -> None:
    with pytest.raises(RequestRejected) as unknown:
        await client.place_call("ghost", TO)
    assert unknown.value.status == 404
    sandbox.disconnect(SESSION)
    with pytest.raises(RequestRejected) as down:
        await client.stream_call(SESSION, TO)
    assert down.value.status == 409


async def test_live_audio_chunks_only_when_enabled(client: ServiceClient, sandbox: Any,
                                                   webhook_sink: Any) -> None:
    knobs(sandbox, answer_rate=1.0, duplicate_rate=0.0, talk_s=[3.0, 3.0])
    quiet = await client.stream_call(SESSION, TO)
    call_events(webhook_sink, quiet.call_id, 4)  # ringing, connected, ended, recording
    knobs(sandbox, live_audio=True)
    loud = await client.stream_call(SESSION, TO)
    events = call_events(webhook_sink, loud.call_id, 4 + 3)
    chunks = [parse_event(e) for e in events if "seq" in e["data"]]
    assert len(chunks) == 3
    data = sorted((c.data for c in chunks if isinstance(c, CallAudioEvent)),
                  key=lambda d: getattr(d, "seq", 0))
    assert all(isinstance(d, AudioChunk) for d in data)
    assert [(d.seq, d.final, d.sampleRate, d.encoding) for d in data if isinstance(d, AudioChunk)] \
        == [(0, False, 16000, "pcm_s16le"), (1, False, 16000, "pcm_s16le"),
            (2, True, 16000, "pcm_s16le")]
    quiet_events = [e for e in webhook_sink.snapshot()
                    if e["data"].get("callId") == quiet.call_id]
    assert not [e for e in quiet_events if "seq" in e["data"]]
