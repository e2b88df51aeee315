"""SMS, automated voice (URA) and account-webhook bodies and answers (``docs/service-facts.md``).

Request models forbid unknown fields like every other wire model (:mod:`scheduler.service.
requests`): an SMS body never carries ``sessionId``, a voice body has exactly one of
``audioUrl`` / ``flowId``, a bulk voice body exactly one of ``numbers`` / ``recipients``.
Answers are tolerant (:class:`scheduler.service.responses.ResponseModel`). The same models
are used by the client before sending, by the sandbox on receipt and by the dispatcher's
channels when they build a bulk body.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from scheduler.service.requests import API, NonEmpty, PhoneDigits, WireModel
from scheduler.service.responses import ResponseModel, id_text, normalise_message_id

SMS_SEND_PATH = f"{API}/sms/send"
SMS_BULK_PATH = f"{API}/sms/bulk"
VOICE_CALL_PATH = f"{API}/voice/call"
VOICE_BULK_PATH = f"{API}/voice/bulk"
ACCOUNT_WEBHOOKS_PATH = f"{API}/account/webhooks"

SmsRoute = Literal["otp", "marketing"]
AccountChannel = Literal["sms", "voice"]
VariableValue = str | int | float | bool
#: Q.850 causes (and the service's own 150/151) in words, for ledger and reports.
CAUSES: dict[int, str] = {
    16: "normal", 17: "busy", 18: "no response", 19: "no answer", 21: "rejected",
    27: "out of order", 28: "invalid number", 31: "normal, unspecified", 34: "no circuit",
    38: "network out of order", 41: "temporary failure", 127: "interworking",
    150: "ring time-out", 151: "voicemail",
}


def account_webhook_path(channel: str) -> str:
    """``/api/v1/account/webhooks/{channel}``."""
    return f"{ACCOUNT_WEBHOOKS_PATH}/{channel}"


def cause_text(cause: int | None, description: str | None = None) -> str | None:
    """A Q.850 cause as readable text ("busy", "no answer", "voicemail")."""
    if cause is None:
        return description or None
    return CAUSES.get(cause) or description or f"cause {cause}"


# --------------------------------------------------------------------------- SMS requests


class SmsSendBody(WireModel):
    """``POST /api/v1/sms/send``: one text to one number."""

    to: PhoneDigits
    text: NonEmpty
    route: SmsRoute | None = None
    sender: str | None = None


class SmsBulkBody(WireModel):
    """``POST /api/v1/sms/bulk``: one text to many numbers."""

    to: Annotated[list[PhoneDigits], Field(min_length=1)]
    text: NonEmpty
    route: SmsRoute | None = None
    sender: str | None = None


# --------------------------------------------------------------------------- voice requests


class VoiceSettings(WireModel):
    """Settings a single call, a bulk call and a campaign's voice step share."""

    audioUrl: NonEmpty | None = None
    flowId: NonEmpty | None = None
    trunk: str | None = None
    from_: str | None = Field(default=None, alias="from")
    audioSecs: int | None = Field(default=None, ge=1)
    maxAttempts: int | None = Field(default=None, ge=1, le=10)
    name: Annotated[str, StringConstraints(max_length=200)] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> VoiceSettings:
        """Exactly one of ``audioUrl`` and ``flowId``."""
        if (self.audioUrl is None) == (self.flowId is None):
            raise ValueError("give exactly one of audioUrl and flowId")
        return self


class VoiceCallBody(VoiceSettings):
    """``POST /api/v1/voice/call``: one call."""

    to: PhoneDigits


class VoiceRecipient(WireModel):
    """One recipient of a bulk call, with the values of the flow's ``{{input.*}}`` slots."""

    phone: PhoneDigits
    variables: dict[str, VariableValue] | None = None


class VoiceBulkBody(VoiceSettings):
    """``POST /api/v1/voice/bulk``: many calls of one audio or flow."""

    numbers: Annotated[list[PhoneDigits], Field(min_length=1)] | None = None
    recipients: Annotated[list[VoiceRecipient], Field(min_length=1)] | None = None
    scheduledAt: str | None = None

    @model_validator(mode="after")
    def _one_list(self) -> VoiceBulkBody:
        """Exactly one of ``numbers`` and ``recipients``."""
        if (self.numbers is None) == (self.recipients is None):
            raise ValueError("give exactly one of numbers and recipients")
        return self


# --------------------------------------------------------------------------- account webhooks


class AccountWebhookBody(WireModel):
    """``PUT /api/v1/account/webhooks/{sms|voice}``; ``secret: null`` clears the secret."""

    url: str | None = None
    secret: str | None = None
    events: list[str] | None = None
    enabled: bool | None = None


# --------------------------------------------------------------------------- answers


class SmsSendResult(ResponseModel):
    """Answer of ``sms/send``."""

    success: bool | None = None
    messageId: str | None = None
    gatewayMessageId: str | None = None
    segments: int | None = None
    status: str | None = None
    costMicroReais: int | None = None

    _ids = field_validator("messageId", "gatewayMessageId", mode="before")(id_text)

    @property
    def message_key(self) -> str | None:
        """The id in the letter case used to match ``sms.*`` events."""
        return normalise_message_id(self.messageId)


class SmsBulkItem(ResponseModel):
    """One recipient's result in an ``sms/bulk`` answer; ``skipped``: the wallet ran out."""

    to: str
    messageId: str | None = None
    status: Literal["sent", "failed", "skipped"]
    error: str | None = None

    _ids = field_validator("messageId", mode="before")(id_text)


class SmsBulkResult(ResponseModel):
    """Answer of ``sms/bulk``: counts and a result per recipient."""

    success: bool | None = None
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    results: list[SmsBulkItem] = Field(default_factory=list)


class VoiceCallResult(ResponseModel):
    """Answer of ``voice/call``."""

    success: bool | None = None
    callId: str | None = None
    reservedMicroReais: int | None = None
    tier: str | None = None

    _ids = field_validator("callId", mode="before")(id_text)


class VoiceBulkResult(ResponseModel):
    """Answer of ``voice/bulk``: how many were dialed and how many skipped (wallet)."""

    success: bool | None = None
    bulkId: str | None = None
    dialed: int = 0
    skipped: int = 0
    reservedMicroReais: int | None = None
    tier: str | None = None
    scheduled: bool | None = None
    scheduledAt: str | None = None

    _ids = field_validator("bulkId", mode="before")(id_text)


class AccountWebhook(ResponseModel):
    """One channel's account webhook as ``GET /api/v1/account/webhooks`` lists it."""

    channel: str
    url: str | None = None
    hasSecret: bool = False
    events: list[str] = Field(default_factory=list)
    enabled: bool = False


class AccountWebhooks(ResponseModel):
    """Answer of ``GET /api/v1/account/webhooks``."""

    success: bool | None = None
    webhooks: list[AccountWebhook] = Field(default_factory=list)

    def for_channel(self, channel: str) -> AccountWebhook | None:
        """The configuration of ``channel``, if the service listed it."""
        return next((w for w in self.webhooks if w.channel == channel), None)


class AccountWebhookResult(ResponseModel):
    """Answer of ``PUT /api/v1/account/webhooks/{channel}``."""

    success: bool | None = None
    config: AccountWebhook | None = None


def voice_key(bulk_id: str | None, to: str | None) -> str | None:
    """The id a bulk call's recipient is matched by: its ``bulkCallId`` and number.

    ``voice/bulk`` answers with a ``bulkId`` only; the call events carry ``callId``,
    ``bulkCallId`` and ``to``, so a delivery holds ``bulkid:digits`` (lower case, as the
    ledger keeps every message id: ``message_id_norm``).
    """
    if not bulk_id or not to:
        return None
    digits = "".join(ch for ch in to if ch.isdigit())
    return f"{bulk_id.strip().lower()}:{digits}" if digits else None
