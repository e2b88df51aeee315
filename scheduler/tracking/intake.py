"""From an HTTP request to an :class:`Incoming` event: authenticity, size, JSON, shape.

Every refusal is a :class:`Rejected` with a 4xx status and a message meant for the sender
of the webhook; nothing here touches the database. Secrets (the URL token, the HMAC secret)
are compared in constant time and never put in a message.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import orjson
from starlette.types import Receive

from scheduler.dispatch.channels import SESSION_CHANNEL, known_channel
from scheduler.service.account_events import SmsStatus, VoiceCall
from scheduler.service.account_models import voice_key
from scheduler.service.event_data import MessageData, Receipt
from scheduler.service.events import CallOfferEvent, Event, SessionEvent, parse_event
from scheduler.service.exceptions import EventParseError
from scheduler.service.label_events import LabelChat, LabelModel
from scheduler.tracking.call_keys import call_dedupe_key, call_id, call_number

# ASCII-only, so that any string (even a lone surrogate escape) hashes without an error.
_canonical = json.JSONEncoder(ensure_ascii=True, sort_keys=True, separators=(",", ":")).encode


class Rejected(Exception):
    """A webhook request refused with a 4xx ``status`` and a clear ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Incoming:
    """One parsed event, ready to be stored (its row) and applied (``event``)."""

    dedupe_key: str
    name: str
    channel: str | None
    session_id: str | None
    number: str | None
    message_id_norm: str | None
    occurred_at: datetime | None
    received_at: datetime
    payload: str
    event: Event

    def row(self) -> dict[str, Any]:
        """The ``events`` row of this event."""
        return {
            "dedupe_key": self.dedupe_key, "event": self.name, "channel": self.channel,
            "session_id": self.session_id, "number": self.number,
            "message_id_norm": self.message_id_norm, "occurred_at": self.occurred_at,
            "received_at": self.received_at, "payload": self.payload,
        }

    @property
    def when(self) -> datetime:
        """When it happened: the event's own time, else when it was received."""
        return self.occurred_at or self.received_at


# --------------------------------------------------------------------------- request checks


class RawRequest:
    """The parts of an ASGI HTTP request a webhook looks at (no framework objects: the
    webhooks are the receiver's hot path)."""

    __slots__ = ("_headers", "query", "receive")

    def __init__(self, scope: Mapping[str, Any], receive: Receive) -> None:
        self._headers: dict[bytes, bytes] = dict(scope.get("headers") or ())
        self.query: bytes = scope.get("query_string") or b""
        self.receive = receive

    def header(self, name: bytes) -> str | None:
        """A header's value (``name`` in lower case), or None."""
        value = self._headers.get(name)
        return None if value is None else value.decode("latin-1")

    def query_param(self, name: str) -> str | None:
        """The first value of a query parameter, or None."""
        values = parse_qs(self.query.decode("latin-1"), keep_blank_values=True).get(name)
        return values[0] if values else None


def check_content_type(value: str | None) -> None:
    """Only JSON bodies: ``application/json`` (or a ``+json`` type), else 415."""
    media = (value or "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not (media.startswith("application/")
                                            and media.endswith("+json")):
        shown = media or "none"
        raise Rejected(415, f"content type must be application/json, got {shown}")


async def read_body(request: RawRequest, limit: int) -> bytes:
    """The raw body, refused with 413 past ``limit`` bytes (declared or actually sent)."""
    declared = request.header(b"content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise Rejected(400, "Content-Length is not a number") from None
        if size < 0:
            raise Rejected(400, "Content-Length is negative")
        if size > limit:
            raise Rejected(413, f"event too large: {size} bytes (limit {limit})")
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise Rejected(400, "the client went away before the body was read")
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > limit:
            raise Rejected(413, f"event too large: more than {limit} bytes (limit {limit})")
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def check_token(given: str | None, expected: bytes) -> None:
    """The session webhook's URL token, compared in constant time; 401 when wrong."""
    if given is None:
        raise Rejected(401, "missing token: the webhook URL must carry ?token=")
    if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected):
        raise Rejected(401, "wrong token")


def check_signature(body: bytes, header: str | None, secret: bytes | None) -> None:
    """``X-DAPI-Signature`` = hex HMAC-SHA256 of the raw body; 401 when missing or wrong."""
    if secret is None:
        raise Rejected(401, "account webhooks are refused: webhook_secret is not configured")
    if not header:
        raise Rejected(401, "missing X-DAPI-Signature header")
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(header.strip().lower().encode("utf-8", "replace"), expected):
        raise Rejected(401, "wrong X-DAPI-Signature")


def sign(body: bytes, secret: str) -> str:
    """The ``X-DAPI-Signature`` the service puts on ``body`` (for tests and benchmarks)."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --------------------------------------------------------------------------- parsing


def decode_json(body: bytes) -> tuple[Any, str]:
    """The JSON value of ``body`` and its text; 400 with the parser's reason when it is not
    JSON (orjson: strict JSON, no NaN, no lone surrogates, at most 1,024 levels deep)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected(400, "malformed JSON: the body is not UTF-8") from None
    try:
        return orjson.loads(body), text
    except orjson.JSONDecodeError as exc:
        raise Rejected(400, f"malformed JSON: {exc}") from None


def dedupe_key(raw: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of an event."""
    try:
        canonical = orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, a lone surrogate: the slower, exact way
        try:
            canonical = _canonical(raw).encode()
        except RecursionError:
            raise Rejected(400, "malformed JSON: nested too deeply") from None
    return hashlib.sha256(canonical).hexdigest()


def jid_number(jid: str | None) -> str | None:
    """The phone number of a user JID (``5511…@s.whatsapp.net`` → ``5511…``); None for
    ``@lid`` and group JIDs, which are not phone numbers."""
    if not jid:
        return None
    user, _, server = jid.partition("@")
    if server and server not in ("s.whatsapp.net", "c.us"):
        return None
    user = user.split(":", 1)[0]
    return user if user.isdigit() else None


def parse_stamp(value: Any) -> datetime | None:
    """Epoch milliseconds (or seconds), or an ISO 8601 string, as an aware UTC datetime."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, str):
            text = value.strip()
            if not text.replace(".", "", 1).isdigit():
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
                return moment.replace(tzinfo=UTC) if moment.tzinfo is None else \
                    moment.astimezone(UTC)
            value = float(text)
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _digits(number: str | None) -> str | None:
    """An account event's number as deliveries keep it: digits only (``+55 11…`` too)."""
    digits = "".join(ch for ch in number if ch.isdigit()) if number else ""
    return digits or None


def _lower(value: str | None) -> str | None:
    return value.strip().lower() if value else None


def _fields(event: Event) -> tuple[str | None, str | None, Any]:
    """(number, normalised message id, event time) of a typed event."""
    data = getattr(event, "data", None)
    if isinstance(data, MessageData):
        party = data.to if data.fromMe or event.event == "messages.sent" else data.from_
        return jid_number(party.jid if party else None), _lower(data.id), data.timestamp
    if isinstance(data, Receipt):
        return jid_number(data.remote_jid), _lower(data.message_id), data.timestamp
    if isinstance(data, SmsStatus):
        return _digits(data.to), _lower(data.messageId), data.timestamp
    if isinstance(data, VoiceCall):
        key = voice_key(data.bulkCallId, data.to) or _lower(data.callId)
        return _digits(data.to), key, data.timestamp
    if isinstance(event, CallOfferEvent):
        return jid_number(event.data.from_), None, event.data.timestamp
    if isinstance(data, LabelModel):  # the change's own time (ts), the chat's phone
        return jid_number(data.chat) if isinstance(data, LabelChat) else None, None, data.ts
    if (outgoing := call_id(event)) is not None:  # an outgoing call: its peer and id
        return jid_number(call_number(event)), _lower(outgoing), None
    return None, None, None


def incoming_from(raw: Any, payload: str, received_at: datetime, *,
                  route: str | None = None) -> Incoming:
    """Parse a decoded body into an :class:`Incoming`; 422 when its shape is wrong.

    ``route`` (``session`` or ``account``) refuses an event sent to the other webhook, so an
    SMS or voice event never bypasses the account webhook's signature.
    """
    if not isinstance(raw, dict):
        raise Rejected(422, f"an event must be a JSON object, got {type(raw).__name__}")
    # A per-session event naming its channel ("whatsapp") is still a per-session event.
    named = known_channel(raw.get("channel"))
    plain = {k: v for k, v in raw.items() if k != "channel"} \
        if named is not None and named.events_name_session else raw
    try:
        event = parse_event(plain)
    except EventParseError as exc:
        raise Rejected(422, str(exc)) from None
    channel = raw.get("channel")
    # the account's channels (SMS, voice): their events name no session
    is_account = named is not None and not named.events_name_session
    if route == "session" and is_account:
        raise Rejected(422, "account (SMS/voice) events must be posted to /webhooks/account")
    if route == "account" and not is_account:
        raise Rejected(422, "per-session events must be posted to /webhooks/session")
    session_id = raw.get("sessionId")
    number, message_id, stamp = _fields(event)
    occurred = parse_stamp(stamp) or parse_stamp(raw.get("timestamp"))
    if not is_account:  # per-session events are WhatsApp's; others keep what they say
        channel = SESSION_CHANNEL if isinstance(event, SessionEvent) or isinstance(
            session_id, str) else (channel if isinstance(channel, str) else None)
    return Incoming(
        dedupe_key=call_dedupe_key(event, raw.get("sessionId")) or dedupe_key(raw),
        name=event.event, channel=channel,
        session_id=session_id if isinstance(session_id, str) else None,
        number=number, message_id_norm=message_id, occurred_at=occurred,
        received_at=received_at, payload=payload, event=event,
    )


def incoming_from_payload(payload: str, received_at: datetime) -> Incoming:
    """An :class:`Incoming` rebuilt from a stored payload (recovery, late matches)."""
    return incoming_from(orjson.loads(payload), payload, received_at)
