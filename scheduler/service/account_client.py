"""SMS, automated voice (URA) and account-webhook calls of the client (``AccountCalls``).

:class:`AccountCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`: it uses
the client's plumbing (``_call`` for the convenience methods, the transport's lean
``post_json`` for :meth:`AccountCalls.post_prepared`) and maps errors the same way as
``send_prepared``. A wallet that cannot pay a single SMS or call is
:class:`~scheduler.service.exceptions.InsufficientBalance` (402, ours: the service documents
no answer for it); a bulk call answers ``skipped`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, get_args

import orjson
from pydantic import BaseModel, ValidationError

from scheduler.service import account_models as am
from scheduler.service.bodies import build
from scheduler.service.exceptions import (
    InvalidRequest,
    UnexpectedResponse,
    rejection_for_body,
    validation_problems,
)
from scheduler.service.requests import wire_body

M = TypeVar("M", bound=BaseModel)
Answer = TypeVar("Answer")


class _NotGiven:
    """The type of :data:`NOT_GIVEN`."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


#: "Leave this setting as it is": the default of :meth:`AccountCalls.set_account_webhook`'s
#: ``secret``, where ``None`` means "clear the secret" (a JSON ``null`` on the wire).
NOT_GIVEN: Final = _NotGiven()


class AccountCalls:
    """SMS, voice and account-webhook endpoints; mixed into ``ServiceClient``."""

    _key: str

    if TYPE_CHECKING:

        async def _post_bytes(self, path: str, payload: bytes) -> tuple[int, bytes]: ...

        async def _call(
            self, method: str, path: str, reader: Callable[[Any], Answer], body: Any = None
        ) -> Answer: ...

    # ------------------------------------------------------------------ hot path

    async def post_prepared(self, path: str, body: Mapping[str, Any], answer: type[M]) -> M:
        """POST a body already validated (a bulk SMS or voice body of a plan) and read the
        answer with ``answer``: the dispatcher's hot path for the account channels.

        Errors are mapped like ``send_prepared``'s: an error status is its
        ``ServiceHTTPError`` (402 → ``InsufficientBalance``), ``success: false`` a
        ``RequestRejected``, a body of another shape ``UnexpectedResponse``.
        """
        try:
            payload = orjson.dumps(body)
        except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
            raise InvalidRequest(f"POST {path}: body is not JSON-serialisable ({exc})") from None
        status, content = await self._post_bytes(path, payload)
        try:
            data = orjson.loads(content) if content else {}
        except orjson.JSONDecodeError:
            raise UnexpectedResponse(f"POST {path}: HTTP {status} answer is not JSON") from None
        if isinstance(data, dict) and data.get("success") is False:
            raise rejection_for_body(status, data, path=path, secret=self._key)
        try:
            return answer.model_validate(data)
        except ValidationError as exc:
            raise UnexpectedResponse(
                f"POST {path}: HTTP {status} answer is not a {answer.__name__}: "
                f"{validation_problems(exc)}"
            ) from None

    async def _post_model(self, path: str, body: BaseModel, answer: type[M]) -> M:
        return await self.post_prepared(path, wire_body(body), answer)

    # ------------------------------------------------------------------ SMS

    async def send_sms(
        self, to: str, text: str, *, route: am.SmsRoute | None = None, sender: str | None = None
    ) -> am.SmsSendResult:
        """``POST /api/v1/sms/send``: one text to one number (digits, no ``+``)."""
        body = build(am.SmsSendBody, to=to, text=text, route=route, sender=sender)
        return await self._post_model(am.SMS_SEND_PATH, body, am.SmsSendResult)

    async def send_sms_bulk(
        self,
        numbers: Sequence[str],
        text: str,
        *,
        route: am.SmsRoute | None = None,
        sender: str | None = None,
    ) -> am.SmsBulkResult:
        """``POST /api/v1/sms/bulk``: one text to many numbers (``to`` on the wire);
        ``skipped`` results mean the wallet ran out."""
        body = build(am.SmsBulkBody, to=list(numbers), text=text, route=route, sender=sender)
        return await self._post_model(am.SMS_BULK_PATH, body, am.SmsBulkResult)

    # ------------------------------------------------------------------ voice

    async def call_voice(self, body: am.VoiceCallBody) -> am.VoiceCallResult:
        """``POST /api/v1/voice/call``: one automated call."""
        return await self._post_model(am.VOICE_CALL_PATH, body, am.VoiceCallResult)

    async def dial(
        self,
        to: str,
        *,
        audio_url: str | None = None,
        flow_id: str | None = None,
        **settings: Any,
    ) -> am.VoiceCallResult:
        """:meth:`call_voice` from keywords; ``settings`` by wire name (``trunk``, ``from``,
        ``audioSecs``, ``maxAttempts``, ``name``). Exactly one of ``audio_url`` and
        ``flow_id``."""
        body = build(am.VoiceCallBody, to=to, audioUrl=audio_url, flowId=flow_id, **settings)
        return await self.call_voice(body)

    async def call_voice_bulk(self, body: am.VoiceBulkBody) -> am.VoiceBulkResult:
        """``POST /api/v1/voice/bulk``: many calls of one audio or IVR flow; ``skipped``
        counts the recipients the wallet could not pay for (the tail of the list)."""
        return await self._post_model(am.VOICE_BULK_PATH, body, am.VoiceBulkResult)

    # ------------------------------------------------------------------ account webhooks

    async def get_account_webhooks(self) -> am.AccountWebhooks:
        """``GET /api/v1/account/webhooks``: both channels' settings (never the secret)."""
        return await self._call("GET", am.ACCOUNT_WEBHOOKS_PATH, am.AccountWebhooks.model_validate)

    async def set_account_webhook(
        self,
        channel: am.AccountChannel,
        *,
        url: str | None = None,
        secret: str | _NotGiven | None = NOT_GIVEN,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> am.AccountWebhookResult:
        """``PUT /api/v1/account/webhooks/{sms|voice}``: change what is given.

        ``url``, ``events`` and ``enabled`` are sent when not ``None`` (``events=[]`` means
        every event of the channel); ``secret`` is sent when given, and ``secret=None``
        sends ``null``, which clears it.
        """
        if channel not in get_args(am.AccountChannel):
            raise InvalidRequest(f"channel must be sms or voice, got {channel!r}")
        values: dict[str, Any] = {}
        if url is not None:
            values["url"] = url
        if not isinstance(secret, _NotGiven):
            values["secret"] = secret
        if events is not None:
            values["events"] = list(events)
        if enabled is not None:
            values["enabled"] = enabled
        body = build(am.AccountWebhookBody, **values)
        wire = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return await self._call(
            "PUT", am.account_webhook_path(channel), am.AccountWebhookResult.model_validate, wire
        )
