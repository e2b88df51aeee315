"""``/sandbox/sessions/{id}/labels``: change a session's labels (real-time label events),
replay them as a full sync (``appstate.label.*``), and read them (see
:mod:`scheduler.sandbox.labels`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from scheduler.sandbox.bodies import read_object, validate
from scheduler.sandbox.labels import LabelChanges, LabelDesk

control = APIRouter(prefix="/sandbox/sessions/{session_id}/labels")


def labels_of(request: Request) -> LabelDesk:
    """The label desk of the sandbox serving ``request``."""
    desk: LabelDesk = request.app.state.labels
    return desk


@control.get("")
async def read_labels(request: Request, session_id: str) -> JSONResponse:
    """The session's labels, chat and message associations as the sandbox holds them."""
    return JSONResponse(labels_of(request).state(session_id).record())


@control.post("")
async def change_labels(request: Request, session_id: str) -> JSONResponse:
    """Apply label changes; each goes to the session's webhook as a real-time event."""
    data, _ = await read_object(request)
    body = validate(LabelChanges, data)
    return JSONResponse(labels_of(request).change(session_id, body))


@control.post("/full-sync")
async def full_sync(request: Request, session_id: str) -> JSONResponse:
    """The whole label state again, as full-sync events (``appstate.label.*``)."""
    return JSONResponse(labels_of(request).full_sync(session_id))
