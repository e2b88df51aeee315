"""Response bodies of the service: tolerant models that ignore fields they do not know.

The interface leaves most response bodies "not shown"; these models take what
``docs/service-facts.md`` documents, accept a body wrapped in ``{success, data: {...}}`` or not,
and never fail on an extra field. Message ids may differ in letter case between a send's
answer and the events: compare them with :func:`normalise_message_id`.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator


def normalise_message_id(message_id: str | None) -> str | None:
    """The case-insensitive key of a message id (upper case, trimmed); ``None`` stays ``None``."""
    return message_id.strip().upper() if message_id is not None else None


class ResponseModel(BaseModel):
    """Base of every response model: unknown fields are ignored, wire names kept; each is
    built on first use (``campaign senders`` imports them all and reads the limits alone)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True,
                              defer_build=True)


def id_text(value: Any) -> Any:
    """An id the service may send as a number, as text (a ``mode="before"`` validator)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def unwrap(raw: Any, key: str) -> Any:
    """``raw["data"]`` when the body wraps its record there (no ``key`` at the top level)."""
    if isinstance(raw, dict) and key not in raw and isinstance(raw.get("data"), dict):
        return raw["data"]
    return raw


class Ack(BaseModel):
    """A generic acknowledgement (``{success, message?, ...}``); extra fields are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    success: bool | None = None
    message: str | None = None


class SendResult(ResponseModel):
    """Answer of a send: ``messageId`` is what ``messages.sent`` later carries as ``data.id``."""

    success: bool | None = None
    message: str | None = None
    messageId: str | None = None
    timestamp: int | None = None
    status: str | None = None
    commandId: str | None = None

    _ids = field_validator("messageId", "commandId", mode="before")(id_text)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _epoch_ms(cls, value: Any) -> int | None:
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return _count(value)

    @property
    def message_key(self) -> str | None:
        """The message id in the normalised letter case used to match events."""
        return normalise_message_id(self.messageId)


_send_result_json = SendResult.model_validate_json


def parse_send_result(content: bytes) -> SendResult:
    """A send answer from its JSON bytes (pydantic's fast path); a ``data`` wrapper is undone."""
    result = _send_result_json(content)
    if result.messageId is None and b'"data"' in content:
        raw = json.loads(content)
        if isinstance(raw, dict) and isinstance(raw.get("data"), dict):
            result = SendResult.model_validate({**raw, **raw["data"]})
    return result


class SessionRecord(ResponseModel):
    """A session as the service describes it."""

    sessionId: str
    id: str | None = None
    type: str | None = None
    status: str | None = None
    provider: str | None = None
    webhookUrl: str | None = None
    phone: str | None = None
    name: str | None = None
    qrCode: str | None = None
    qrCodeImage: str | None = None
    qrCodeUpdatedAt: str | None = None
    markPreviousAsRead: bool | None = None
    createdAt: str | None = None
    updatedAt: str | None = None

    @classmethod
    def from_body(cls, raw: Any, session_id: str | None = None) -> SessionRecord:
        """The record from a bare or ``data``-wrapped body (``session_id`` if it has none)."""
        record = unwrap(raw, "sessionId")
        if session_id is not None and isinstance(record, dict) and "sessionId" not in record:
            record = {**record, "sessionId": session_id}
        return cls.model_validate(record)


def session_list(raw: Any) -> list[SessionRecord]:
    """Sessions from a list body, or one wrapped in ``data`` or ``sessions``."""
    items = raw
    if isinstance(raw, dict):
        items = raw.get("sessions", raw.get("data", []))
        if isinstance(items, dict):
            items = items.get("sessions", [])
    if not isinstance(items, list):
        raise ValueError("expected a list of sessions")
    return [SessionRecord.from_body(item) for item in items]


class QrCode(ResponseModel):
    """The QR code of a session awaiting a scan."""

    sessionId: str | None = None
    status: str | None = None
    qrCode: str | None = None
    qrCodeImage: str | None = None
    qrCodeUpdatedAt: str | None = None

    def png_bytes(self) -> bytes | None:
        """The PNG image decoded from the ``qrCodeImage`` data URL; ``None`` when absent."""
        if not self.qrCodeImage:
            return None
        _, sep, payload = self.qrCodeImage.partition("base64,")
        return base64.b64decode(payload if sep else self.qrCodeImage)


def _count(value: Any) -> int | None:
    """A usage count, or ``None`` for anything that is not a non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None


class Quota(ResponseModel):
    """Counts per channel; ``None`` means not known (or no limit known)."""

    messages: int | None = None
    sms: int | None = None
    voice: int | None = None

    @field_validator("messages", "sms", "voice", mode="before")
    @classmethod
    def _lenient(cls, value: Any) -> int | None:
        return _count(value)


class Limits(ResponseModel):
    """Plan limits of a session; every field is ``None`` when the service did not say."""

    sessionId: str | None = None
    plan: str | None = None
    period: str | None = None
    limits: Quota = Quota()
    used: Quota = Quota()
    resetsAt: str | None = None

    @classmethod
    def from_body(cls, raw: Any) -> Limits:
        """Limits from ``{success, sessionId, data: {...}}``; an unknown shape gives no limits."""
        if not isinstance(raw, dict):
            return cls()
        inner = raw.get("data")
        data: dict[str, Any] = inner if isinstance(inner, dict) else raw
        values = {k: data.get(k) for k in ("plan", "period", "limits", "used", "resetsAt")}
        values["sessionId"] = raw.get("sessionId", data.get("sessionId"))
        clean = {k: v for k, v in values.items() if v is not None}
        for key in ("plan", "period", "resetsAt", "sessionId"):
            if key in clean and not isinstance(clean[key], str):
                del clean[key]
        for key in ("limits", "used"):
            if key in clean and not isinstance(clean[key], dict):
                del clean[key]
        try:
            return cls.model_validate(clean)
        except ValidationError:
            return cls()

    def remaining(self, channel: str = "messages") -> int | None:
        """What is left for ``channel`` in this period; ``None`` when no limit is known."""
        limit: int | None = getattr(self.limits, channel, None)
        if limit is None:
            return None
        used: int | None = getattr(self.used, channel, None)
        return max(0, limit - (used or 0))


class RejectedCall(ResponseModel):
    """The ``data`` of a successful call rejection."""

    callId: str | None = None


class RejectCallResult(ResponseModel):
    """Answer of ``POST /api/v1/calls/reject``."""

    success: bool | None = None
    sessionId: str | None = None
    data: RejectedCall | None = None
    error: str | None = None

    @property
    def call_id(self) -> str | None:
        """The id of the rejected call, when the service echoed it."""
        return self.data.callId if self.data else None
