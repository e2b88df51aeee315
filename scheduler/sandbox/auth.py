"""API-key check (and injected latency) for every ``/api/v1`` request, as raw ASGI.

A plain ASGI middleware rather than a FastAPI dependency: it also covers unknown paths, and
it costs one header scan per request on the sandbox's hot path.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from scheduler.sandbox.common import envelope

if TYPE_CHECKING:
    from scheduler.sandbox.world import Sandbox

_PREFIX = "/api/"


class ApiKeyMiddleware:
    """401 ``Invalid API key`` unless ``Authorization`` is exactly the key; then latency."""

    def __init__(self, app: ASGIApp, sandbox: Sandbox) -> None:
        self.app = app
        self.sandbox = sandbox
        self._key = sandbox.config.api_key.get_secret_value().encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the key of API requests; pass everything else through."""
        if scope["type"] == "http" and scope["path"].startswith(_PREFIX):
            if not self._authorized(scope["headers"]):
                response = JSONResponse(envelope(401, "Invalid API key"), status_code=401)
                await response(scope, receive, send)
                return
            sandbox = self.sandbox
            delay = sandbox.faults.latency_s(sandbox.config)
            if delay:
                await asyncio.sleep(delay)
        await self.app(scope, receive, send)

    def _authorized(self, headers: list[tuple[bytes, Any]]) -> bool:
        for name, value in headers:
            if name == b"authorization":
                return hmac.compare_digest(value, self._key)
        return False
