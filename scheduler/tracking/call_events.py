"""Outgoing WhatsApp calls in tracking: each event stored once, one terminal outcome a call.

The connection layer repeats call events, and its repeats are new envelopes (another
timestamp), so the usual key (the hash of the whole event) would store them twice. An
outgoing call's events are keyed instead by session, ``callId`` and *slot*: ``ringing``,
``connected``, ``terminal`` (``call.ended`` and ``call.not_answered`` share it) and
``recording`` (``call.audio`` variant B; the keys are in
:mod:`scheduler.tracking.call_keys`). A repeat, or a second terminal event of another
name, is then a duplicate at intake and never stored: a call has exactly one terminal
outcome, the first that arrived. A recording of a call that was not answered is stored but
ignored (the interface says there is none). Live audio chunks (about one a second a call)
are parsed and counted by the receiver, never stored.

A call placed by a ``calls`` run is its delivery's message id (the ``callId``, in lower
case, as every message id): ``call.ringing`` makes it ``sent``, ``call.connected``
``answered``, ``call.ended`` keeps it ``answered`` and ``call.not_answered`` makes it
``not_answered``, both stamping ``ended_at`` (the call is over: its session may place the
next one). Its ``details`` are recomputed from the call's stored events each time (so the
order they came in does not matter): ``callId``, ``answered``, ``reason``, ``durationMs``
(the recording's, else from ``call.connected`` to ``call.ended``) and ``recordingUrl``. An
event that comes before its delivery holds the ``callId`` is stored ``unmatched`` and
applied when the dispatcher records the call (:mod:`scheduler.tracking.matching`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler.ledger.states import DeliveryState as S
from scheduler.service.event_data import AudioChunk, Recording
from scheduler.service.events import CallAudioEvent, CallStateEvent, Event
from scheduler.tracking.call_keys import slot_key
from scheduler.tracking.intake import Incoming, parse_stamp
from scheduler.tracking.store import BatchStore, EventLogStore, TrackingStore

NOT_ANSWERED = "call.not_answered"
#: The events of an outgoing call, matched to a delivery by ``callId``.
CALL_EVENTS = ("call.ringing", "call.connected", "call.ended", NOT_ANSWERED, "call.audio")
#: event → (state it proves, time columns it stamps) of a ``calls`` delivery.
MOVES: dict[str, tuple[str, tuple[str, ...]]] = {
    "call.ringing": (S.SENT, ("sent_at",)),
    "call.connected": (S.ANSWERED, ("sent_at",)),
    "call.ended": (S.ANSWERED, ("sent_at", "ended_at")),
    NOT_ANSWERED: (S.NOT_ANSWERED, ("sent_at", "ended_at")),
}


def is_live_chunk(event: Event) -> bool:
    """A live audio chunk (``call.audio`` variant A): counted by the receiver, never stored."""
    return isinstance(event, CallAudioEvent) and isinstance(event.data, AudioChunk)


def apply_call_event(book: BatchStore, item: Incoming, now: datetime) -> str:
    """Apply an outgoing call's event (stored once already) to the delivery holding its
    ``callId``; its result (``unmatched`` while no delivery holds it)."""
    event = item.event
    if isinstance(event, CallStateEvent):
        reason = f" ({event.data.reason})" if event.data.reason else ""
        result = {"call.ringing": "call ringing", "call.connected": "call answered",
                  "call.ended": "call ended", NOT_ANSWERED: "call not answered"}[event.event] \
            + reason
    else:
        assert isinstance(event, CallAudioEvent) and isinstance(event.data, Recording)
        terminal = slot_key(item.session_id, event.data.callId, "terminal")
        found = book.events_by_keys([terminal]).get(terminal)
        if found is not None and found[0] == NOT_ANSWERED:
            return "ignored: a recording of a call that was not answered"
        result = "call recording"
    norm = item.message_id_norm
    if norm is None or not book.held_message_ids([norm]):
        return "unmatched"
    move = MOVES.get(item.name)
    if move is not None:
        book.track_progress(move[0], [(norm, item.when)], now, stamps=move[1])
    assert isinstance(event, CallStateEvent | CallAudioEvent)
    outcome = outcome_in(book, item.session_id, event.data.callId)
    book.merge_details(norm, outcome.details())
    return result


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What tracking knows of one outgoing call."""

    call_id: str
    status: str  # unknown | ringing | answered (in progress) | ended | not_answered
    reason: str | None = None
    duration_ms: int | None = None
    recording_url: str | None = None

    def details(self) -> dict[str, Any]:
        """What a delivery keeps of the call in ``details`` (unknown values left out)."""
        out: dict[str, Any] = {"callId": self.call_id}
        if self.status in ("answered", "ended"):
            out["answered"] = True
        elif self.status == "not_answered":
            out["answered"] = False
        for key, value in (("reason", self.reason), ("durationMs", self.duration_ms),
                           ("recordingUrl", self.recording_url)):
            if value is not None:
                out[key] = value
        return out


def _stamp(payload: str) -> datetime | None:
    envelope = json.loads(payload)
    return parse_stamp(envelope.get("timestamp")) if isinstance(envelope, dict) else None


def outcome_in(book: EventLogStore, session_id: str | None, call_id: str) -> CallOutcome:
    """One call's outcome from its stored events (a recording only for an answered call;
    without one, the duration runs from ``call.connected`` to ``call.ended``)."""
    keys = {slot: slot_key(session_id, call_id, slot)
            for slot in ("ringing", "connected", "terminal", "recording")}
    found = book.events_by_keys(list(keys.values()))
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
        elif "connected" in got:
            began, ended = _stamp(got["connected"][1]), _stamp(payload)
            if began is not None and ended is not None and ended >= began:
                duration = round((ended - began).total_seconds() * 1000)
        return CallOutcome(call_id, "ended", reason, duration, url)
    if "connected" in got:
        return CallOutcome(call_id, "answered")
    return CallOutcome(call_id, "ringing" if "ringing" in got else "unknown")


def call_outcome(store: TrackingStore, session_id: str, call_id: str) -> CallOutcome:
    """One call's outcome from its stored events (see :func:`outcome_in`)."""
    with store.reading(f"read the events of call {call_id}") as book:
        return outcome_in(book, session_id, call_id)
