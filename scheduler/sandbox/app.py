"""``create_app(config)``: the sandbox as a FastAPI app (routes, key check, error envelope)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from scheduler.sandbox import (
    routes_account,
    routes_calls,
    routes_catalog,
    routes_inspect,
    routes_labels,
    routes_members,
    routes_messages,
    routes_sessions,
    routes_templates,
)
from scheduler.sandbox.auth import ApiKeyMiddleware
from scheduler.sandbox.catalog import CatalogDesk
from scheduler.sandbox.cloud_api import CloudApiDesk
from scheduler.sandbox.common import ApiError, envelope
from scheduler.sandbox.config import SandboxConfig
from scheduler.sandbox.labels import LabelDesk
from scheduler.sandbox.outgoing_calls import OutgoingCalls
from scheduler.sandbox.world import Sandbox

log = logging.getLogger(__name__)


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return JSONResponse(
        envelope(exc.status_code, str(exc.detail)),
        status_code=exc.status_code,
        headers=exc.headers,
    )


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
    )
    return JSONResponse(envelope(400, f"Invalid request: {problems}"), status_code=400)


class ClientGone:
    """A client that goes away mid-request (killed, timed out) is normal traffic: one plain
    line in the log, not a bug with a traceback. Outermost of the app's middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request; a client gone before its body was read ends it quietly."""
        try:
            await self.app(scope, receive, send)
        except ClientDisconnect:
            log.info("client went away before its request was read: %s %s (nothing done)",
                     scope.get("method"), scope.get("path"))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("sandbox bug while serving %s %s", request.method, request.url.path)
    return JSONResponse(envelope(500, "Internal server error"), status_code=500)


def create_app(config: SandboxConfig | None = None) -> FastAPI:
    """A new sandbox app with its own in-memory world (``app.state.sandbox``)."""
    sandbox = Sandbox(config or SandboxConfig())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await sandbox.start()
        try:
            yield
        finally:
            await sandbox.aclose()

    app = FastAPI(
        title="Messaging Session Service sandbox",
        version="1.2.1",
        lifespan=lifespan,
        docs_url="/sandbox/docs",
        redoc_url=None,
        openapi_url="/sandbox/openapi.json",
    )
    app.state.sandbox = sandbox
    app.state.catalog = CatalogDesk(sandbox)
    app.state.labels = LabelDesk(sandbox)
    app.state.outgoing_calls = OutgoingCalls(sandbox)
    app.state.cloud_api = CloudApiDesk(sandbox)
    app.include_router(routes_messages.router)
    app.include_router(routes_sessions.router)
    app.include_router(routes_inspect.router)
    app.include_router(routes_labels.control)
    app.include_router(routes_account.router)
    app.include_router(routes_account.control)
    app.include_router(routes_catalog.router)
    app.include_router(routes_members.router)
    app.include_router(routes_members.control)
    app.include_router(routes_calls.router)
    app.include_router(routes_calls.control)
    app.include_router(routes_templates.router)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
    fast_routes = {**routes_messages.SEND_HANDLERS, **routes_account.ACCOUNT_SEND_HANDLERS}
    app.add_middleware(ApiKeyMiddleware, sandbox=sandbox, fast_routes=fast_routes)
    app.add_middleware(ClientGone)
    return app
