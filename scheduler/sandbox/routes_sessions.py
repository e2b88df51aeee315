"""``/api/v1/sessions/*`` and session migration: create, list, QR, settings, passkey."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from scheduler.sandbox.bodies import parse_body, read_object
from scheduler.sandbox.common import ApiError, iso_ms
from scheduler.sandbox.world import Sandbox
from scheduler.service.requests import (
    API,
    CallSettingsBody,
    CreateSessionBody,
    MarkPreviousAsReadBody,
    MigrationBody,
    SetWebhookBody,
)

router = APIRouter(prefix=API)


def sandbox_of(request: Request) -> Sandbox:
    """The sandbox serving ``request``."""
    return request.app.state.sandbox


@router.post("/sessions")
async def create_session(request: Request) -> JSONResponse:
    """Create a session (``connecting``, with a QR code to scan)."""
    body, _ = await parse_body(request, CreateSessionBody)
    session = sandbox_of(request).create_session(body)
    return JSONResponse({"success": True, "data": session.record()})


@router.get("/sessions")
async def list_sessions(request: Request) -> JSONResponse:
    """Every session of the account."""
    sessions = sandbox_of(request).world.sessions.values()
    return JSONResponse({"success": True, "data": [s.record() for s in sessions]})


@router.get("/sessions/{session_id}")
async def get_session(request: Request, session_id: str) -> JSONResponse:
    """One session record."""
    session = sandbox_of(request).session(session_id)
    return JSONResponse({"success": True, "data": session.record()})


@router.delete("/sessions/{session_id}")
async def delete_session(request: Request, session_id: str) -> JSONResponse:
    """Log out and delete a session."""
    sandbox_of(request).delete_session(session_id)
    return JSONResponse({"success": True, "sessionId": session_id})


@router.get("/sessions/{session_id}/qr")
async def get_qr(request: Request, session_id: str, image: str | None = None) -> Response:
    """The QR code to scan: JSON with a PNG data URL, or the PNG itself with ``image=1``."""
    sandbox = sandbox_of(request)
    session = sandbox.session(session_id)
    if image is not None and image != "1":
        raise ApiError(400, "image: the only allowed value is 1")
    if session.status == "connected":
        raise ApiError(409, f"Session {session_id} is already connected; no QR code to scan")
    if session.status == "disconnected":
        session.status = "connecting"
    if image == "1":
        return Response(session.png(), media_type="image/png")
    assert session.qr_updated_at is not None
    return JSONResponse(
        {
            "sessionId": session.session_id,
            "status": session.status,
            "qrCode": session.qr_code,
            "qrCodeImage": session.qr_data_url(),
            "qrCodeUpdatedAt": iso_ms(session.qr_updated_at),
        }
    )


@router.post("/sessions/{session_id}/webhook")
async def set_webhook(request: Request, session_id: str) -> JSONResponse:
    """Set the session's webhook URL."""
    sandbox = sandbox_of(request)
    body, _ = await parse_body(request, SetWebhookBody)
    session = sandbox.session(session_id)
    session.webhook_url = body.webhookUrl
    session.updated_at = sandbox.now()
    return JSONResponse({"success": True, "sessionId": session_id, "webhookUrl": body.webhookUrl})


@router.post("/sessions/{session_id}/call-settings")
async def call_settings(request: Request, session_id: str) -> JSONResponse:
    """Automatic rejection of incoming calls, with an optional message."""
    sandbox = sandbox_of(request)
    body, _ = await parse_body(request, CallSettingsBody)
    session = sandbox.session(session_id)
    if body.rejectCalls is not None:
        session.reject_calls = body.rejectCalls
    if body.rejectCallsMessage is not None:
        session.reject_calls_message = body.rejectCallsMessage
    data = {"rejectCalls": session.reject_calls, "rejectCallsMessage": session.reject_calls_message}
    return JSONResponse({"success": True, "sessionId": session_id, "data": data})


@router.post("/sessions/{session_id}/mark-previous-as-read-settings")
async def mark_previous_as_read(request: Request, session_id: str) -> JSONResponse:
    """The ``markPreviousAsRead`` setting."""
    sandbox = sandbox_of(request)
    body, _ = await parse_body(request, MarkPreviousAsReadBody)
    session = sandbox.session(session_id)
    session.mark_previous_as_read = body.markPreviousAsRead
    data = {"markPreviousAsRead": session.mark_previous_as_read}
    return JSONResponse({"success": True, "sessionId": session_id, "data": data})


@router.post("/sessions/{session_id}/auth/passkey")
async def passkey(request: Request, session_id: str) -> JSONResponse:
    """A passkey assertion (any JSON object; its shape is not shown) completes pairing."""
    sandbox = sandbox_of(request)
    await read_object(request)
    session = sandbox.connect(session_id)
    return JSONResponse({"success": True, "sessionId": session_id, "status": session.status})


@router.post("/session-migration/migrate")
async def migrate(request: Request) -> JSONResponse:
    """Migrate a web session with a one-time code (8 of A-Z0-9)."""
    await parse_body(request, MigrationBody)
    return JSONResponse({"success": True, "message": "Session migration accepted"})
