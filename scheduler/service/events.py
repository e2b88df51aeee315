"""Webhook events of the service: envelopes and :func:`parse_event`.

Per-session events arrive as ``{event, sessionId, data, timestamp, traceId?}``; account
events (SMS and automated voice calls) as ``{event, channel: sms|voice, data, timestamp}``.
:func:`parse_event` picks the model by event name (and channel): an unknown name is kept as
an :class:`UnknownEvent` with its raw body, and a known name with a malformed shape raises
:class:`~scheduler.service.exceptions.EventParseError`. The ``data`` models are in
:mod:`scheduler.service.event_data`; message ids are compared by ``message_key``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, ValidationError

from scheduler.service.account_events import SmsStatus, VoiceCall
from scheduler.service.event_data import (
    CallAudio,
    CallOffer,
    CallRelay,
    CallState,
    EventModel,
    MessageData,
    Receipt,
    Stamp,
)
from scheduler.service.exceptions import EventParseError, validation_problems
from scheduler.service.label_events import LabelChat, LabelEdit, LabelMessage
from scheduler.service.session_events import (
    ConnectionPairCode,
    ConnectionQrCode,
    ConnectionStatus,
)

# --------------------------------------------------------------------------- envelopes


class Event(EventModel):
    """Base of every event: its name and when it happened."""

    event: str
    timestamp: Stamp | None = None


class SessionEvent(Event):
    """An event of one session, delivered to the session's webhook."""

    sessionId: str
    traceId: str | None = None


class MessageEvent(SessionEvent):
    """``messages.sent`` (``fromMe`` true) or ``messages.received``."""

    data: MessageData


class ReceiptEvent(SessionEvent):
    """``message.delivered`` or ``message.read``."""

    data: Receipt


class CallOfferEvent(SessionEvent):
    """``call.offer``: an incoming call."""

    data: CallOffer


class CallRelayEvent(SessionEvent):
    """``call.accepted`` or ``call.rejected`` (incoming calls)."""

    data: CallRelay


class CallStateEvent(SessionEvent):
    """A state change of an outgoing call."""

    data: CallState


class CallAudioEvent(SessionEvent):
    """``call.audio``: a live chunk (``AudioChunk``) or the recording (``Recording``)."""

    data: CallAudio


class LabelEditEvent(SessionEvent):
    """A label was created, edited or deleted (``appstate.*``: from a full sync)."""

    data: LabelEdit


class LabelChatEvent(SessionEvent):
    """A label was applied to or removed from a chat."""

    data: LabelChat


class LabelMessageEvent(SessionEvent):
    """A label was applied to or removed from a message."""

    data: LabelMessage


class ConnectionStatusEvent(SessionEvent):
    """``connection.status``: the session connected, disconnected, logged out..."""

    data: ConnectionStatus


class ConnectionQrCodeEvent(SessionEvent):
    """``connection.qrcode``: a fresh QR code to scan."""

    data: ConnectionQrCode


class ConnectionPairCodeEvent(SessionEvent):
    """``connection.paircode``: a pairing code to type on the phone."""

    data: ConnectionPairCode


class AccountEvent(Event):
    """An event of the account webhook (SMS or automated voice)."""

    channel: Literal["sms", "voice"]


class SmsEvent(AccountEvent):
    """An SMS delivery report."""

    data: SmsStatus


class VoiceEvent(AccountEvent):
    """An automated voice call event."""

    data: VoiceCall


class UnknownEvent(Event):
    """An event this program does not know: kept, with its raw body, never rejected."""

    model_config = ConfigDict(extra="ignore", frozen=True, arbitrary_types_allowed=True)

    sessionId: Any = None
    channel: Any = None
    timestamp: Any = None
    data: Any = None
    raw: dict[str, Any]


SESSION_EVENTS: dict[str, type[SessionEvent]] = {
    "messages.sent": MessageEvent,
    "messages.received": MessageEvent,
    "message.delivered": ReceiptEvent,
    "message.read": ReceiptEvent,
    "call.offer": CallOfferEvent,
    "call.accepted": CallRelayEvent,
    "call.rejected": CallRelayEvent,
    **dict.fromkeys(
        ("call.ringing", "call.connected", "call.ended", "call.not_answered"), CallStateEvent
    ),
    "call.audio": CallAudioEvent,
    "labels.edit": LabelEditEvent,
    "appstate.label.edit": LabelEditEvent,
    "labels.association.chat": LabelChatEvent,
    "appstate.label.association.chat": LabelChatEvent,
    "labels.association.message": LabelMessageEvent,
    "appstate.label.association.message": LabelMessageEvent,
    "connection.status": ConnectionStatusEvent,
    "connection.qrcode": ConnectionQrCodeEvent,
    "connection.paircode": ConnectionPairCodeEvent,
}
ACCOUNT_EVENTS: dict[tuple[str, str], type[AccountEvent]] = {
    **{("sms", f"sms.{s}"): SmsEvent for s in ("delivered", "undelivered", "failed", "expired")},
    **{("voice", f"call.{s}"): VoiceEvent for s in ("started", "answered", "dtmf", "ended")},
}


def parse_event(raw: Any) -> Event:
    """The typed event of a webhook body; unknown names give :class:`UnknownEvent`."""
    if not isinstance(raw, Mapping):
        raise EventParseError(f"an event must be a JSON object, got {type(raw).__name__}")
    name = raw.get("event")
    if not isinstance(name, str) or not name:
        raise EventParseError("not an event: no 'event' name")
    channel = raw.get("channel")
    model: type[Event] | None
    if channel is None:
        model = SESSION_EVENTS.get(name)
    else:
        model = ACCOUNT_EVENTS.get((channel, name)) if isinstance(channel, str) else None
    if model is None:
        return UnknownEvent(
            event=name, sessionId=raw.get("sessionId"), channel=channel,
            timestamp=raw.get("timestamp"), data=raw.get("data"), raw=dict(raw),
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise EventParseError(
            f"{name}: malformed event ({problems})", event=name, errors=problems.split("; ")
        ) from None
