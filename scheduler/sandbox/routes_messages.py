"""Send endpoints of every message type, call rejection and limits (asynchronous commands:
:mod:`scheduler.sandbox.routes_catalog`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from scheduler.sandbox.bodies import parse_body
from scheduler.sandbox.common import ApiError
from scheduler.sandbox.faults import SendFate, hang
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.service.requests import API, SEND_KINDS, RejectCallBody, SendKind

router = APIRouter()


def send_endpoint(kind: SendKind) -> Callable[[Request], Awaitable[Response]]:
    """The handler of one send endpoint: validate, check session and limits, the session's
    rate-limit storm, inject faults."""

    async def send(request: Request) -> Response:
        sandbox = sandbox_of(request)
        body, received = await parse_body(request, kind.model)
        session = sandbox.sending_session(body.sessionId)
        sandbox.check_limit(session)
        sandbox.trouble.check_storm(session)
        cfg = sandbox.config
        outcome = sandbox.faults.outcome(cfg)
        base_url = sandbox.base_url or sandbox.remember_base_url(str(request.base_url))
        if outcome is SendFate.OK:
            return JSONResponse(sandbox.accept_send(kind, body, received, base_url))
        if outcome is SendFate.THROTTLE:
            raise ApiError(
                429,
                "Too many requests, slow down (sandbox fault)",
                headers={"Retry-After": str(cfg.throttle_retry_after_s)},
            )
        if outcome is SendFate.FAIL:
            raise ApiError(500, "Internal server error (sandbox fault)")
        if outcome is SendFate.TIMEOUT_ACCEPTED:
            sandbox.accept_send(kind, body, received, base_url)
        await hang(request, cfg.timeout_hang_s)
        raise ApiError(504, "Gateway time-out (sandbox fault)")

    send.__name__ = f"send_{kind.name}"
    send.__doc__ = f"``POST {kind.path}``: send a {kind.name} message."
    return send


#: Handlers of the send endpoints by path; the gateway calls them directly (hot path).
SEND_HANDLERS = {kind.path: send_endpoint(kind) for kind in SEND_KINDS.values()}
for _path, _handler in SEND_HANDLERS.items():
    router.add_api_route(_path, _handler, methods=["POST"], name=_handler.__name__)


@router.post(f"{API}/calls/reject")
async def reject_call(request: Request) -> JSONResponse:
    """Reject an incoming call; ``call.rejected`` follows asynchronously."""
    body, received = await parse_body(request, RejectCallBody)
    return JSONResponse(sandbox_of(request).calls.reject(body, received))


@router.get(f"{API}/limits/{{session_id}}")
async def limits(request: Request, session_id: str) -> JSONResponse:
    """Plan limits and today's usage of one session (sandbox clock, UTC day)."""
    sandbox = sandbox_of(request)
    session = sandbox.session(session_id)
    return JSONResponse({"success": True, "sessionId": session_id, "data": sandbox.limits(session)})
