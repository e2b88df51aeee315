"""``/sandbox/*``: what tests and benchmarks look at and poke (no API key needed)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, RedirectResponse

from scheduler.sandbox.bodies import read_object, validate
from scheduler.sandbox.common import ApiError
from scheduler.sandbox.payloads import received_text
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.service.requests import NonEmpty, PhoneDigits

router = APIRouter(prefix="/sandbox")
Since = Annotated[int, Field(ge=0)]


class IncomingCallBody(BaseModel):
    """``POST /sandbox/sessions/{id}/incoming-call``: who calls (digits or a JID)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: NonEmpty | None = Field(default=None, alias="from")


class InboundBody(BaseModel):
    """``POST /sandbox/sessions/{id}/receive``: a person writes to the session."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: PhoneDigits = Field(alias="from")
    text: NonEmpty


async def _optional_object(request: Request) -> dict:
    if not (await request.body()).strip():
        return {}
    data, _ = await read_object(request)
    return data


@router.get("/health")
async def health() -> JSONResponse:
    """Liveness."""
    return JSONResponse({"ok": True})


@router.get("/sends")
async def sends(request: Request, since: Since = 0, session_id: str | None = None) -> JSONResponse:
    """Every request the sandbox accepted, in order, from index ``since``."""
    return JSONResponse(sandbox_of(request).world.sends_since(since, session_id))


@router.get("/webhooks")
async def webhooks(request: Request, since: Since = 0) -> JSONResponse:
    """Every webhook delivery attempt: url, event, status (or error), attempt, time."""
    return JSONResponse(sandbox_of(request).webhooks.log[since:])


@router.get("/replies")
async def replies(request: Request) -> JSONResponse:
    """Every text a simulated recipient replied, with ``optOut`` true for opt-out words."""
    return JSONResponse(sandbox_of(request).recipients.replies)


@router.get("/trouble")
async def trouble(request: Request, session_id: str | None = None) -> JSONResponse:
    """What each session went through: accepted sends, opt-outs, rate-limit storms, its
    logout (when and why) and the message ids of its sends never delivered."""
    return JSONResponse(sandbox_of(request).trouble.report(session_id))


@router.get("/faults")
async def get_faults(request: Request) -> JSONResponse:
    """The run-time settings now in force."""
    return JSONResponse(sandbox_of(request).config.knobs())


@router.post("/faults")
async def set_faults(request: Request) -> JSONResponse:
    """Change some run-time settings (fault and recipient knobs); answers all of them."""
    sandbox = sandbox_of(request)
    update, _ = await read_object(request)
    return JSONResponse(sandbox.update_knobs(update).knobs())


@router.post("/sessions/{session_id}/scan")
async def scan(request: Request, session_id: str) -> JSONResponse:
    """The phone scanned the QR code: the session is ``connected``."""
    session = sandbox_of(request).connect(session_id)
    return JSONResponse({"success": True, "data": session.record()})


@router.post("/sessions/{session_id}/disconnect")
async def disconnect(request: Request, session_id: str) -> JSONResponse:
    """The phone dropped the session: ``disconnected``; sends now fail with 409."""
    session = sandbox_of(request).disconnect(session_id)
    return JSONResponse({"success": True, "data": session.record()})


@router.post("/sessions/{session_id}/logout")
async def logout(request: Request, session_id: str) -> JSONResponse:
    """The phone logged the session out: ``logged_out`` goes to the webhook; the session
    is ``disconnected`` with a new QR code to scan."""
    session = sandbox_of(request).logout(session_id)
    return JSONResponse({"success": True, "data": session.record()})


@router.post("/sessions/{session_id}/incoming-call")
async def incoming_call(request: Request, session_id: str) -> JSONResponse:
    """Someone calls the session: ``call.offer`` goes to the webhook."""
    sandbox = sandbox_of(request)
    body = validate(IncomingCallBody, await _optional_object(request))
    return JSONResponse(sandbox.calls.incoming(session_id, body.from_))


@router.post("/sessions/{session_id}/receive")
async def receive(request: Request, session_id: str) -> JSONResponse:
    """A person writes to the session: ``messages.received`` goes to the webhook."""
    sandbox = sandbox_of(request)
    data, from_form = await read_object(request)
    body = validate(InboundBody, data, from_form=from_form)
    session = sandbox.session(session_id)
    payload = received_text(sandbox.inbound_context(session_id, body.from_), body.text)
    sandbox.emit(session, "messages.received", payload)
    return JSONResponse({"success": True, "messageId": payload["id"]})


@router.get("/media/{message_id}")
async def media(request: Request, message_id: str) -> RedirectResponse:
    """The "stored copy" of a sent medium: a redirect to the URL it was sent from."""
    url = sandbox_of(request).world.media.get(message_id.lower())
    if url is None:
        raise ApiError(404, "Media not found")
    return RedirectResponse(url, status_code=307)
