"""WhatsApp call calls of the client (``CallCalls``): event messages and outgoing calls.

:class:`CallCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`; it uses the
client's ``_call`` plumbing, so errors are mapped as everywhere else (a ``cloud_api``
session's refusal is a :class:`~scheduler.service.exceptions.RequestRejected` whose message
says so). Bodies are checked before anything is sent (:class:`InvalidRequest`). The
rejection of incoming calls stays in the client itself (``reject_call``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler.service.bodies import build
from scheduler.service.call_models import (
    PLACE_PATH,
    SEND_EVENT_PATH,
    STREAM_PATH,
    PlaceCallBody,
    PlacedCall,
    SendCallEventBody,
    StreamCallBody,
)
from scheduler.service.requests import wire_body
from scheduler.service.responses import SendResult

Answer = TypeVar("Answer")


def _send_result(raw: Any) -> SendResult:
    if isinstance(raw, dict) and "messageId" not in raw and isinstance(raw.get("data"), dict):
        raw = {**raw, **raw["data"]}
    return SendResult.model_validate(raw)


class CallCalls:
    """``calls/send-event``, ``calls/place`` and ``calls/stream``; mixed into ``ServiceClient``."""

    if TYPE_CHECKING:

        async def _call(
            self, method: str, path: str, reader: Callable[[Any], Answer], body: Any = None
        ) -> Answer: ...

    async def send_call_event(
        self, session_id: str, to: str, *, title: str | None = None,
        scheduled_time: str | datetime | None = None, call_type: str | None = None,
        create_call_link: bool | None = None, custom_call_link_url: str | None = None,
    ) -> SendResult:
        """``POST /api/v1/calls/send-event``: a scheduled call or event message.

        ``scheduled_time`` may be a datetime (sent as ISO 8601); ``call_type`` is ``audio`` or
        ``video``; a link is created (``create_call_link``) or given, not both."""
        when = scheduled_time.isoformat() if isinstance(scheduled_time, datetime) \
            else scheduled_time
        body = build(SendCallEventBody, sessionId=session_id, to=to, title=title,
                     scheduledTime=when, callType=call_type, createCallLink=create_call_link,
                     customCallLinkUrl=custom_call_link_url)
        return await self._call("POST", SEND_EVENT_PATH, _send_result, wire_body(body))

    async def place_call(self, session_id: str, to: str) -> PlacedCall:
        """``POST /api/v1/calls/place``: a standard outgoing call; its events follow."""
        body = build(PlaceCallBody, sessionId=session_id, to=to)
        return await self._call("POST", PLACE_PATH, PlacedCall.model_validate, wire_body(body))

    async def stream_call(self, session_id: str, to: str, *,
                          record: bool | None = None) -> PlacedCall:
        """``POST /api/v1/calls/stream``: an outgoing call in recording mode (an answered
        call ends with its recording, ``call.audio``, unless ``record`` is false)."""
        body = build(StreamCallBody, sessionId=session_id, to=to, record=record)
        return await self._call("POST", STREAM_PATH, PlacedCall.model_validate, wire_body(body))
