"""Outgoing WhatsApp calls in tracking: each event stored once, one terminal outcome a call.

The connection layer repeats call events, and its repeats are new envelopes (another
timestamp), so the usual key (the hash of the whole event) would store them twice. An
outgoing call's events are keyed instead by session, ``callId`` and *slot*: ``ringing``,
``connected``, ``terminal`` (``call.ended`` and ``call.not_answered`` share it) and
``recording`` (``call.audio`` variant B). A repeat, or a second terminal event of another
name, is then a duplicate at intake and never stored: a call has exactly one terminal
outcome, the first that arrived. A recording of a call that was not answered is stored but
ignored (the interface says there is none). Live audio chunks (about one a second a call)
are parsed and counted by the receiver, never stored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.ledger.access import Connection, Engine, read
from scheduler.ledger.queries import call_events as cq
from scheduler.service.event_data import AudioChunk, Recording
from scheduler.service.events import CallAudioEvent, CallStateEvent, Event

if TYPE_CHECKING:
    from scheduler.tracking.intake import Incoming

SLOTS = {"call.ringing": "ringing", "call.connected": "connected",
         "call.ended": "terminal", "call.not_answered": "terminal"}
NOT_ANSWERED = "call.not_answered"


def call_slot(event: Event) -> str | None:
    """The slot of an outgoing call's event (None for any other event)."""
    if isinstance(event, CallStateEvent):
        return SLOTS.get(event.event)
    if isinstance(event, CallAudioEvent) and isinstance(event.data, Recording):
        return "recording"
    return None


def is_live_chunk(event: Event) -> bool:
    """A live audio chunk (``call.audio`` variant A): counted by the receiver, never stored."""
    return isinstance(event, CallAudioEvent) and isinstance(event.data, AudioChunk)


def slot_key(session_id: str | None, call_id: str, slot: str) -> str:
    """The ``dedupe_key`` of one slot of one call (sha256 hex, like the other keys)."""
    return hashlib.sha256(f"call:{session_id or ''}:{call_id}:{slot}".encode()).hexdigest()


def call_dedupe_key(event: Event, session_id: object) -> str | None:
    """The key an outgoing call's event is stored under, or None (use the usual key)."""
    slot = call_slot(event)
    if slot is None or not isinstance(event, CallStateEvent | CallAudioEvent):
        return None
    return slot_key(session_id if isinstance(session_id, str) else None,
                    event.data.callId, slot)


def call_number(event: Event) -> str | None:
    """The peer of an outgoing call's event (``peerPn``, or the recording's ``phone``)."""
    if isinstance(event, CallStateEvent):
        return event.data.peerPn
    if isinstance(event, CallAudioEvent) and isinstance(event.data, Recording):
        return event.data.phone
    return None


def apply_call_event(conn: Connection, item: Incoming) -> str:
    """The result of an outgoing call's event (stored once already; nothing else to move)."""
    event = item.event
    if isinstance(event, CallStateEvent):
        reason = f" ({event.data.reason})" if event.data.reason else ""
        return {"call.ringing": "call ringing", "call.connected": "call answered",
                "call.ended": "call ended", NOT_ANSWERED: "call not answered"}[event.event] \
            + reason
    assert isinstance(event, CallAudioEvent) and isinstance(event.data, Recording)
    terminal = slot_key(item.session_id, event.data.callId, "terminal")
    found = cq.events_by_keys(conn, [terminal]).get(terminal)
    if found is not None and found[0] == NOT_ANSWERED:
        return "ignored: a recording of a call that was not answered"
    return "call recording"


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What tracking knows of one outgoing call."""

    call_id: str
    status: str  # unknown | ringing | answered (in progress) | ended | not_answered
    reason: str | None = None
    duration_ms: int | None = None
    recording_url: str | None = None


def call_outcome(engine: Engine, session_id: str, call_id: str) -> CallOutcome:
    """One call's outcome from its stored events (a recording only for an answered call)."""
    keys = {slot: slot_key(session_id, call_id, slot)
            for slot in ("ringing", "connected", "terminal", "recording")}
    with read(engine, f"read the events of call {call_id}") as conn:
        found = cq.events_by_keys(conn, list(keys.values()))
    got = {slot: found[key] for slot, key in keys.items() if key in found}
    if "terminal" in got:
        name, payload = got["terminal"]
        reason = json.loads(payload).get("data", {}).get("reason")
        if name == NOT_ANSWERED:
            return CallOutcome(call_id, "not_answered", reason)
        duration = url = None
        if "recording" in got:
            recording = Recording.model_validate(json.loads(got["recording"][1])["data"])
            url = recording.full_url
            duration = int(recording.durationMs) if recording.durationMs is not None else None
        return CallOutcome(call_id, "ended", reason, duration, url)
    if "connected" in got:
        return CallOutcome(call_id, "answered")
    return CallOutcome(call_id, "ringing" if "ringing" in got else "unknown")
