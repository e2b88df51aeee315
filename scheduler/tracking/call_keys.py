"""The keys of an outgoing WhatsApp call's events: slot, ``dedupe_key``, ``callId``, peer.

Intake needs them to store each call event once (:mod:`scheduler.tracking.intake`), and
applying needs them to find a call's stored events (:mod:`scheduler.tracking.call_events`).
They live here, apart from both, so neither of those imports the other to get them. An
outgoing call's events are keyed by session, ``callId`` and *slot*: ``ringing``,
``connected``, ``terminal`` (``call.ended`` and ``call.not_answered`` share it) and
``recording`` (``call.audio`` variant B); see :mod:`scheduler.tracking.call_events` for why.
"""

from __future__ import annotations

import hashlib

from scheduler.service.event_data import Recording
from scheduler.service.events import CallAudioEvent, CallStateEvent, Event

#: event name → slot of an outgoing call's state events.
SLOTS = {"call.ringing": "ringing", "call.connected": "connected",
         "call.ended": "terminal", "call.not_answered": "terminal"}


def call_slot(event: Event) -> str | None:
    """The slot of an outgoing call's event (None for any other event)."""
    if isinstance(event, CallStateEvent):
        return SLOTS.get(event.event)
    if isinstance(event, CallAudioEvent) and isinstance(event.data, Recording):
        return "recording"
    return None


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


def call_id(event: Event) -> str | None:
    """The ``callId`` of an outgoing call's event (None for any other event)."""
    if call_slot(event) is None or not isinstance(event, CallStateEvent | CallAudioEvent):
        return None
    return event.data.callId


def call_number(event: Event) -> str | None:
    """The peer of an outgoing call's event (``peerPn``, or the recording's ``phone``)."""
    if isinstance(event, CallStateEvent):
        return event.data.peerPn
    if isinstance(event, CallAudioEvent) and isinstance(event.data, Recording):
        return event.data.phone
    return None
