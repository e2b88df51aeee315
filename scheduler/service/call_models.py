"""WhatsApp call bodies and answers: ``calls/send-event``, ``calls/place``, ``calls/stream``.

The interface shows the body of ``POST /api/v1/calls/send-event`` (``sessionId``, ``to``,
``title?``, ``scheduledTime?``, ``callType?`` audio|video, ``createCallLink?``,
``customCallLinkUrl?``); its answer is not shown. Ours:

- ``send-event`` answers like a send (``{success, messageId, timestamp}``); a call link is
  either created on the network (``createCallLink``) or given (``customCallLinkUrl``, an
  http(s) URL), never both;
- ``calls/place`` and ``calls/stream`` take ``{sessionId, to, record?}`` (``record`` only on
  ``stream``, default true: stream mode without it gives no finished recording) and answer
  ``{success, sessionId, data: {callId, to, state: "dialing", mode, record}}``.

Outgoing calls then go ``call.ringing`` → ``call.connected`` → ``call.ended`` (or
``call.not_answered``), the events modelled in :mod:`scheduler.service.event_data`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from scheduler.service.requests import API, NonEmpty, WireModel
from scheduler.service.responses import ResponseModel

SEND_EVENT_PATH = f"{API}/calls/send-event"
PLACE_PATH = f"{API}/calls/place"
STREAM_PATH = f"{API}/calls/stream"
CallType = Literal["audio", "video"]
#: The events of an outgoing call (``call.audio`` is its recording in stream mode).
OUTGOING_STATES = ("call.ringing", "call.connected", "call.ended", "call.not_answered")


class SendCallEventBody(WireModel):
    """``POST /api/v1/calls/send-event``: a scheduled call or event message."""

    sessionId: NonEmpty
    to: NonEmpty
    title: str | None = None
    scheduledTime: str | None = None
    callType: CallType | None = None
    createCallLink: bool | None = None
    customCallLinkUrl: str | None = None

    @field_validator("customCallLinkUrl")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("customCallLinkUrl must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _one_link(self) -> SendCallEventBody:
        if self.createCallLink and self.customCallLinkUrl:
            raise ValueError("give createCallLink or customCallLinkUrl, not both")
        return self


class PlaceCallBody(WireModel):
    """``POST /api/v1/calls/place`` (ours): a standard outgoing call to ``to``."""

    sessionId: NonEmpty
    to: NonEmpty


class StreamCallBody(PlaceCallBody):
    """``POST /api/v1/calls/stream`` (ours): an outgoing call in recording mode."""

    record: bool | None = None


class PlacedCallData(ResponseModel):
    """``data`` of a placed call: its ``callId`` (the key of its events)."""

    callId: str
    to: str | None = None
    state: str | None = None
    mode: str | None = None
    record: bool | None = None


class PlacedCall(ResponseModel):
    """Answer of ``calls/place`` and ``calls/stream`` (ours)."""

    success: bool | None = None
    sessionId: str | None = None
    data: PlacedCallData

    @property
    def call_id(self) -> str:
        """The call's id."""
        return self.data.callId
