"""Official provider endpoints: the manual ``cloud_api`` connection (ours), its templates
(``/api/v1/connections/cloud-api/{id}/templates``) and ``/api/v1/messages/send/template``.

Behaviour and shapes: :mod:`scheduler.sandbox.cloud_api`.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from scheduler.sandbox.bodies import parse_body
from scheduler.sandbox.cloud_api import CloudApiDesk
from scheduler.sandbox.common import ApiError
from scheduler.sandbox.faults import SendFate, hang
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.service.template_models import (
    CLOUD_API_PATH,
    LANGUAGE_PATTERN,
    SEND_TEMPLATE_PATH,
    CloudApiConnectBody,
    SendTemplateBody,
    TemplateBody,
)

router = APIRouter()


def desk_of(request: Request) -> CloudApiDesk:
    """The ``cloud_api`` desk of the sandbox serving ``request``."""
    desk: CloudApiDesk = request.app.state.cloud_api
    return desk


@router.post(CLOUD_API_PATH)
async def connect(request: Request) -> JSONResponse:
    """A manual official-provider connection (ours): ``connected`` at once, no QR code."""
    body, _ = await parse_body(request, CloudApiConnectBody)
    session = desk_of(request).connect(body)
    return JSONResponse({"success": True, "data": session.record()})


@router.get(CLOUD_API_PATH + "/{connection_id}/templates")
async def list_templates(request: Request, connection_id: str) -> JSONResponse:
    """The connection's templates."""
    return JSONResponse({"success": True, "data": desk_of(request).listed(connection_id)})


@router.post(CLOUD_API_PATH + "/{connection_id}/templates")
async def create_template(request: Request, connection_id: str) -> JSONResponse:
    """A new template (APPROVED at once, ours)."""
    body, _ = await parse_body(request, TemplateBody)
    return JSONResponse({"success": True, "data": desk_of(request).create(connection_id, body)})


@router.delete(CLOUD_API_PATH + "/{connection_id}/templates/{name}")
async def delete_template(request: Request, connection_id: str, name: str,
                          language: str | None = None) -> JSONResponse:
    """Remove a template: one language (``?language=``), else every language of the name."""
    if language is not None and not re.fullmatch(LANGUAGE_PATTERN, language):
        raise ApiError(400, f"language: {language!r} is not a language code such as pt_BR")
    removed = desk_of(request).delete(connection_id, name, language)
    return JSONResponse({"success": True, "data": removed[0] if len(removed) == 1 else None,
                         "deleted": removed})


@router.post(SEND_TEMPLATE_PATH)
async def send_template(request: Request) -> JSONResponse:
    """Send a template message through a ``cloud_api`` connection; the injected faults of
    every send apply (throttle, failure, time-out before or after accepting), and the
    session's trouble (storm, logout, lost sends)."""
    sandbox = sandbox_of(request)
    body, received = await parse_body(request, SendTemplateBody)
    desk = desk_of(request)
    session, template = desk.check(body)
    sandbox.trouble.check_storm(session)
    cfg = sandbox.config
    outcome = sandbox.faults.outcome(cfg)
    if outcome is SendFate.OK:
        return JSONResponse(desk.accept(session, template, body, received))
    if outcome is SendFate.THROTTLE:
        raise ApiError(429, "Too many requests, slow down (sandbox fault)",
                       headers={"Retry-After": str(cfg.throttle_retry_after_s)})
    if outcome is SendFate.FAIL:
        raise ApiError(500, "Internal server error (sandbox fault)")
    if outcome is SendFate.TIMEOUT_ACCEPTED:
        desk.accept(session, template, body, received)
    await hang(request, cfg.timeout_hang_s)
    raise ApiError(504, "Gateway time-out (sandbox fault)")
