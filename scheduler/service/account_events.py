"""The ``data`` payloads of the account webhook's events: SMS reports and voice (URA) calls.

Shapes from ``docs/service-facts.md`` (sections SMS and URA); their envelopes are in
:mod:`scheduler.service.events`. Unknown fields are ignored.
"""

from __future__ import annotations

from scheduler.service.event_data import EventModel, Number, Stamp

SMS_ERROR_CODES = frozenset({
    "NETWORK_ERROR", "INVALID_NUMBER", "LANDLINE", "BLACKLIST", "CANCELED", "NO_WHATSAPP",
    "CONTENT_BLOCKED", "NO_COVERAGE", "REJECTED", "NOT_RECEIVED",
})


class SmsStatus(EventModel):
    """``data`` of ``sms.delivered|undelivered|failed|expired``."""

    messageId: str
    to: str | None = None
    status: str | None = None
    errorCode: str | None = None
    segments: int | None = None
    timestamp: Stamp | None = None


class VoiceCall(EventModel):
    """``data`` of automated voice call events (``call.started|answered|dtmf|ended``)."""

    callId: str
    bulkCallId: str | None = None
    to: str | None = None
    answered: bool | None = None
    talkSeconds: Number | None = None
    digits: str | None = None
    cause: int | None = None
    causeDescription: str | None = None
    timestamp: Stamp | None = None
