"""SMS, voice and account-webhook endpoints, and their ``/sandbox`` inspection and control.

The four send endpoints (``sms/send``, ``sms/bulk``, ``voice/call``, ``voice/bulk``) get the
same request faults as the message sends (``fail_rate``, ``throttle_rate``, ``timeout_rate``
drawn from the same stream) and are served on the gateway's fast path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.responses import JSONResponse, Response

from scheduler.sandbox.account import CHANNELS
from scheduler.sandbox.bodies import parse_body, read_object, validate
from scheduler.sandbox.common import ApiError
from scheduler.sandbox.faults import SendFate, hang
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.sandbox.world import Sandbox
from scheduler.service.account_models import (
    ACCOUNT_WEBHOOKS_PATH,
    SMS_BULK_PATH,
    SMS_SEND_PATH,
    VOICE_BULK_PATH,
    VOICE_CALL_PATH,
    AccountWebhookBody,
    SmsBulkBody,
    SmsSendBody,
    VoiceBulkBody,
    VoiceCallBody,
)

router = APIRouter()
control = APIRouter(prefix="/sandbox")
Handler = Callable[[Request], Awaitable[Response]]


async def _with_faults(
    request: Request, sandbox: Sandbox, accept: Callable[[], dict[str, Any]]
) -> Response:
    """``accept()``'s answer, unless an injected fault answers 429, 500 or a time-out."""
    cfg = sandbox.config
    outcome = sandbox.faults.outcome(cfg)
    if outcome is SendFate.OK:
        return JSONResponse(accept())
    if outcome is SendFate.THROTTLE:
        raise ApiError(429, "Too many requests, slow down (sandbox fault)",
                       headers={"Retry-After": str(cfg.throttle_retry_after_s)})
    if outcome is SendFate.FAIL:
        raise ApiError(500, "Internal server error (sandbox fault)")
    if outcome is SendFate.TIMEOUT_ACCEPTED:
        accept()
    await hang(request, cfg.timeout_hang_s)
    raise ApiError(504, "Gateway time-out (sandbox fault)")


async def sms_send(request: Request) -> Response:
    """``POST /api/v1/sms/send``: one SMS (402 when the wallet cannot pay it)."""
    sandbox = sandbox_of(request)
    body, received = await parse_body(request, SmsSendBody)
    return await _with_faults(request, sandbox, lambda: sandbox.account.sms.send(body, received))


async def sms_bulk(request: Request) -> Response:
    """``POST /api/v1/sms/bulk``: one text to many numbers."""
    sandbox = sandbox_of(request)
    body, received = await parse_body(request, SmsBulkBody)
    limit = sandbox.config.sms_bulk_max
    if len(body.to) > limit:
        raise ApiError(400, f"Invalid request body: to: at most {limit} numbers per request")
    return await _with_faults(request, sandbox, lambda: sandbox.account.sms.bulk(body, received))


async def voice_call(request: Request) -> Response:
    """``POST /api/v1/voice/call``: one automated call."""
    sandbox = sandbox_of(request)
    body, received = await parse_body(request, VoiceCallBody)
    return await _with_faults(request, sandbox,
                              lambda: sandbox.account.voice.call(body, received))


async def voice_bulk(request: Request) -> Response:
    """``POST /api/v1/voice/bulk``: many calls of one audio or IVR flow."""
    sandbox = sandbox_of(request)
    body, received = await parse_body(request, VoiceBulkBody)
    return await _with_faults(request, sandbox,
                              lambda: sandbox.account.voice.bulk(body, received))


#: Handlers of the SMS and voice send endpoints by path, for the gateway's fast path.
ACCOUNT_SEND_HANDLERS: dict[str, Handler] = {
    SMS_SEND_PATH: sms_send,
    SMS_BULK_PATH: sms_bulk,
    VOICE_CALL_PATH: voice_call,
    VOICE_BULK_PATH: voice_bulk,
}
for _path, _handler in ACCOUNT_SEND_HANDLERS.items():
    router.add_api_route(_path, _handler, methods=["POST"], name=_handler.__name__)


@router.get(ACCOUNT_WEBHOOKS_PATH)
async def account_webhooks(request: Request) -> JSONResponse:
    """Both channels' account webhooks (``hasSecret``, never the secret)."""
    return JSONResponse(sandbox_of(request).account.hooks.listing())


@router.put(ACCOUNT_WEBHOOKS_PATH + "/{channel}")
async def set_account_webhook(request: Request, channel: str) -> JSONResponse:
    """Change one channel's account webhook; ``secret: null`` clears the secret."""
    hooks = sandbox_of(request).account.hooks
    if channel not in CHANNELS:
        raise ApiError(404, f"Unknown webhook channel: {channel} (use sms or voice)")
    body, _ = await parse_body(request, AccountWebhookBody)
    return JSONResponse(hooks.update(channel, body))


# --------------------------------------------------------------------------- /sandbox


class WalletChange(BaseModel):
    """``POST /sandbox/wallet``: ``topUpMicroReais`` adds; ``balanceMicroReais`` sets
    (``null``: unlimited). Exactly one of the two."""

    model_config = ConfigDict(extra="forbid")

    topUpMicroReais: int | None = Field(default=None, ge=0)
    balanceMicroReais: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one(self) -> WalletChange:
        if len(self.model_fields_set & {"topUpMicroReais", "balanceMicroReais"}) != 1:
            raise ValueError("give exactly one of topUpMicroReais and balanceMicroReais")
        if "topUpMicroReais" in self.model_fields_set and self.topUpMicroReais is None:
            raise ValueError("topUpMicroReais must be a number of micro-reais")
        return self


@control.get("/outcomes")
async def outcomes(
    request: Request,
    channel: Annotated[Literal["sms", "voice"], Query()],
    since: Annotated[int, Query(ge=0)] = 0,
) -> JSONResponse:
    """What the sandbox decided for each SMS or call recipient, from index ``since``."""
    return JSONResponse(sandbox_of(request).account.outcomes(channel, since))


@control.get("/wallet")
async def wallet(request: Request) -> JSONResponse:
    """The account's balance, reservations and spending, in micro-reais."""
    return JSONResponse(sandbox_of(request).account.wallet.state())


@control.post("/wallet")
async def change_wallet(request: Request) -> JSONResponse:
    """Top the wallet up, or set its balance."""
    wallet_ = sandbox_of(request).account.wallet
    data, from_form = await read_object(request)
    change = validate(WalletChange, data, from_form=from_form)
    if change.topUpMicroReais is not None:
        wallet_.top_up(change.topUpMicroReais)
    else:
        wallet_.balance = change.balanceMicroReais
    return JSONResponse(wallet_.state())
