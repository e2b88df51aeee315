"""Outgoing WhatsApp calls (``calls/place``, ``calls/stream``) and event messages
(``calls/send-event``), run by the interface's state machine.

A placed call emits ``call.ringing`` at once (state ``ringing``), then either
``call.connected`` (``active``) and exactly one ``call.ended`` (``idle``, reason ``hangup``),
or ``call.not_answered`` (``idle``, reason ``no_answer``) instead: never both, and nothing
after ``call.not_answered``. An answered call started with ``calls/stream`` (``record`` not
false) ends with the finished recording, ``call.audio`` variant B, whose files the sandbox
serves (``/sandbox/calls/{callId}/{full|sender|recipient}.wav``, mono 16 kHz silence).
With the ``live_audio`` knob, such a call also sends live chunks (``call.audio`` variant A,
one per simulated second of talk, ``final`` on the last) between connected and ended.

Whether a call is answered and how long it rings and lasts are seeded; times are simulated
seconds times ``time_scale`` of wall time. The connection layer's duplicates are emulated:
each event is sent again (a new envelope, same ``data``) with ``duplicate_rate``. The knobs
are ours (``GET/POST /sandbox/calls/knobs``). Calls are refused on ``cloud_api`` sessions.
"""

from __future__ import annotations

import base64
import io
import wave
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scheduler.sandbox.common import ApiError, seeded, user_jid
from scheduler.service.call_models import (
    SEND_EVENT_PATH,
    PlaceCallBody,
    SendCallEventBody,
    StreamCallBody,
)

if TYPE_CHECKING:
    from scheduler.sandbox.state import Session
    from scheduler.sandbox.world_view import WorldView

RATE = 16_000
Track = Literal["full", "sender", "recipient"]
TRACKS: tuple[Track, ...] = ("full", "sender", "recipient")
#: Longest silence served for a recording track (the size reported is the real one).
_MAX_SERVED_S = 5


def is_cloud_api(session: Session) -> bool:
    """Whether the session is an official provider (``cloud_api``) connection."""
    return getattr(session, "type", None) == "cloud_api" or session.provider == "cloud_api"


def not_on_cloud_api(session: Session, what: str) -> None:
    """Refuse ``what`` on a ``cloud_api`` session with a clear message (400)."""
    if is_cloud_api(session):
        raise ApiError(400, f"{what} is not available on cloud_api connections "
                            f"(session {session.session_id})")


class CallKnobs(BaseModel):
    """How outgoing calls behave in the sandbox (ours)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    answer_rate: float = Field(default=0.7, ge=0, le=1)
    ring_s: tuple[float, float] = (1.0, 6.0)
    talk_s: tuple[float, float] = (3.0, 20.0)
    duplicate_rate: float = Field(default=0.1, ge=0, le=1)
    time_scale: float = Field(default=0.01, gt=0)
    #: Live audio chunks (``call.audio`` variant A, one a simulated second) on answered
    #: stream-mode calls; off by default (high volume, as the interface warns).
    live_audio: bool = False

    @model_validator(mode="after")
    def _ranges(self) -> CallKnobs:
        for name in ("ring_s", "talk_s"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be (low, high) with 0 <= low <= high")
        return self


def wav_silence(seconds: float) -> bytes:
    """A mono 16 kHz 16-bit WAV of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(b"\0\0" * int(RATE * seconds))
    return buffer.getvalue()


class OutgoingCalls:
    """Outgoing calls of every session, and the event messages sent."""

    def __init__(self, sandbox: WorldView, knobs: CallKnobs | None = None) -> None:
        self._sandbox = sandbox
        self._random = seeded(sandbox.config.seed, "outgoing-calls")
        self.knobs = knobs or CallKnobs()
        self.calls: dict[str, dict[str, Any]] = {}

    def set_knobs(self, update: dict[str, Any]) -> CallKnobs:
        """Change some knobs (validated; unknown ones refused)."""
        try:
            self.knobs = CallKnobs.model_validate({**self.knobs.model_dump(), **update})
        except ValueError as exc:
            raise ApiError(400, f"Invalid call knobs: {exc}") from None
        return self.knobs

    def send_event(self, body: SendCallEventBody, received: dict[str, Any]) -> dict[str, Any]:
        """A scheduled call or event message: recorded like a send (ours: the answer)."""
        sandbox = self._sandbox
        session = sandbox.sending_session(body.sessionId)
        not_on_cloud_api(session, "calls/send-event")
        sandbox.check_limit(session)
        now = sandbox.now()
        message_id = sandbox.ids.message()
        sandbox.world.record_send(path=SEND_EVENT_PATH, session_id=body.sessionId, to=body.to,
                                  body=received, message_id=message_id, at=now)
        return {"success": True, "messageId": message_id, "timestamp": sandbox.now_ms()}

    def place(self, body: PlaceCallBody, received: dict[str, Any], path: str,
              base_url: str) -> dict[str, Any]:
        """Start an outgoing call (``stream`` when ``body`` is a :class:`StreamCallBody`)."""
        sandbox = self._sandbox
        session = sandbox.sending_session(body.sessionId)
        not_on_cloud_api(session, "Calls")
        stream = isinstance(body, StreamCallBody)
        record = isinstance(body, StreamCallBody) and body.record is not False
        knobs, rng = self.knobs, self._random
        answered = rng.random() < knobs.answer_rate
        ring = rng.uniform(*knobs.ring_s)
        talk = rng.uniform(*knobs.talk_s)
        call_id = sandbox.ids.call()
        peer = body.to if "@" in body.to else user_jid(body.to)
        call: dict[str, Any] = {
            "callId": call_id, "sessionId": body.sessionId, "to": peer,
            "mode": "stream" if stream else "place", "record": record,
            "answered": answered, "ringS": round(ring, 3),
            "talkS": round(talk, 3) if answered else 0, "events": [],
        }
        self.calls[call_id] = call
        sandbox.world.record_send(path=path, session_id=body.sessionId, to=body.to,
                                  body=received, message_id=None, at=sandbox.now())
        scale = knobs.time_scale
        self._emit(call, 0.0, "call.ringing", "ringing")
        if answered:
            self._emit(call, ring * scale, "call.connected", "active")
            self._emit(call, (ring + talk) * scale, "call.ended", "idle", "hangup")
            if stream and knobs.live_audio:
                self._emit_chunks(call, ring * scale, talk, scale)
            if record:
                self._emit_recording(call, (ring + talk) * scale + 0.005, talk, base_url)
        else:
            self._emit(call, ring * scale, "call.not_answered", "idle", "no_answer")
        data = {"callId": call_id, "to": peer, "state": "dialing", "mode": call["mode"],
                "record": record}
        return {"success": True, "sessionId": body.sessionId, "data": data}

    def _send(self, call: dict[str, Any], delay: float, event: str,
              data: dict[str, Any]) -> None:
        """Emit ``event`` after ``delay``; sometimes again (the connection layer's repeat)."""
        copies = 2 if self._random.random() < self.knobs.duplicate_rate else 1
        for copy in range(copies):

            def build(copy: int = copy) -> dict[str, Any]:
                call["events"].append(event if copy == 0 else f"{event} (repeat)")
                return dict(data)

            self._sandbox.emit_later(delay + 0.002 * copy, call["sessionId"], event, build)

    def _emit(self, call: dict[str, Any], delay: float, event: str, state: str,
              reason: str | None = None) -> None:
        data: dict[str, Any] = {"callId": call["callId"], "state": state, "peerPn": call["to"]}
        if reason is not None:
            data["reason"] = reason
        self._send(call, delay, event, data)

    def _emit_recording(self, call: dict[str, Any], delay: float, talk_s: float,
                        base_url: str) -> None:
        base = f"{base_url.rstrip('/')}/sandbox/calls/{call['callId']}"
        files = {track: f"{base}/{track}.wav" for track in TRACKS}
        size = 44 + int(RATE * talk_s) * 2
        data = {"callId": call["callId"], "files": files, "url": files["full"],
                "durationMs": int(talk_s * 1000), "sizeBytes": size, "mimetype": "audio/wav",
                "phone": call["to"].split("@", 1)[0]}
        call["recording"] = files["full"]
        self._send(call, delay, "call.audio", data)

    def _emit_chunks(self, call: dict[str, Any], start: float, talk_s: float,
                     scale: float) -> None:
        """About one second of live PCM a simulated second of talk, before the end."""
        count = max(1, int(talk_s))
        chunk = base64.b64encode(b"\0\0" * RATE).decode()
        call["chunks"] = count

        for seq in range(count):

            def build(seq: int = seq) -> dict[str, Any]:
                return {"callId": call["callId"], "seq": seq, "sampleRate": RATE,
                        "channels": 1, "encoding": "pcm_s16le", "data": chunk,
                        "final": seq == count - 1}

            delay = start + talk_s * scale * (seq + 1) / (count + 1)
            self._sandbox.emit_later(delay, call["sessionId"], "call.audio", build)

    def recording(self, call_id: str, track: str) -> bytes:
        """A track of a finished recording (silence, at most a few seconds of it)."""
        call = self.calls.get(call_id)
        if call is None or not call.get("recording") or track not in TRACKS:
            raise ApiError(404, "Recording not found")
        return wav_silence(min(float(call["talkS"]), _MAX_SERVED_S))
