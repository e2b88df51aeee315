"""``/api/v1/calls/send-event``, ``/calls/place``, ``/calls/stream``, and the call controls
(``/sandbox/calls/...``: knobs, the outgoing calls, recording files). Rejection of incoming
calls is in :mod:`scheduler.sandbox.routes_messages`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from scheduler.sandbox.bodies import parse_body
from scheduler.sandbox.outgoing_calls import OutgoingCalls
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.service.call_models import (
    PLACE_PATH,
    SEND_EVENT_PATH,
    STREAM_PATH,
    PlaceCallBody,
    SendCallEventBody,
    StreamCallBody,
)

router = APIRouter()
control = APIRouter(prefix="/sandbox/calls")


def calls_of(request: Request) -> OutgoingCalls:
    """The outgoing-call desk of the sandbox serving ``request``."""
    desk: OutgoingCalls = request.app.state.outgoing_calls
    return desk


def _base_url(request: Request) -> str:
    sandbox = sandbox_of(request)
    return sandbox.base_url or sandbox.remember_base_url(str(request.base_url))


@router.post(SEND_EVENT_PATH)
async def send_event(request: Request) -> JSONResponse:
    """A scheduled call or event message (answered like a send: ours)."""
    body, received = await parse_body(request, SendCallEventBody)
    return JSONResponse(calls_of(request).send_event(body, received))


@router.post(PLACE_PATH)
async def place(request: Request) -> JSONResponse:
    """A standard outgoing call; ``call.ringing`` and the rest follow as webhooks."""
    body, received = await parse_body(request, PlaceCallBody)
    return JSONResponse(calls_of(request).place(body, received, PLACE_PATH, _base_url(request)))


@router.post(STREAM_PATH)
async def stream(request: Request) -> JSONResponse:
    """An outgoing call in recording mode: an answered one ends with ``call.audio``."""
    body, received = await parse_body(request, StreamCallBody)
    return JSONResponse(calls_of(request).place(body, received, STREAM_PATH,
                                                _base_url(request)))


@control.get("/knobs")
async def get_knobs(request: Request) -> JSONResponse:
    """The outgoing-call knobs."""
    return JSONResponse(calls_of(request).knobs.model_dump())


@control.post("/knobs")
async def set_knobs(request: Request) -> JSONResponse:
    """Change outgoing-call knobs: answer_rate, ring_s, talk_s, duplicate_rate, time_scale."""
    update: dict[str, Any] = await request.json()
    return JSONResponse(calls_of(request).set_knobs(update).model_dump())


@control.get("/outgoing")
async def outgoing(request: Request) -> JSONResponse:
    """Every outgoing call placed, with the events emitted so far."""
    return JSONResponse({"calls": list(calls_of(request).calls.values())})


@control.get("/{call_id}/{track}.wav")
async def recording(request: Request, call_id: str, track: str) -> Response:
    """A track of a finished recording (``full``, ``sender`` or ``recipient``)."""
    return Response(calls_of(request).recording(call_id, track), media_type="audio/wav")


@control.post("/{call_id}/accept")
async def accept_elsewhere(request: Request, call_id: str) -> JSONResponse:
    """An incoming call is answered on another device: ``call.accepted``."""
    return JSONResponse(sandbox_of(request).calls.accept_elsewhere(call_id))
