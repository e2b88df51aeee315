"""The API gateway of the sandbox, as raw ASGI: key check, injected latency, fast sends.

Every ``/api/v1`` request must carry ``Authorization: <key>`` (401 ``Invalid API key``
otherwise, unknown paths included). Send endpoints are then dispatched straight to their
handlers, skipping route matching and dependency solving: they are the hot path of
benchmarks. Everything else goes through the FastAPI app as usual.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from scheduler.sandbox.common import ApiError, envelope

if TYPE_CHECKING:
    from scheduler.sandbox.world import Sandbox

_PREFIX = "/api/"
Handler = Callable[[Request], Awaitable[Response]]


class ApiKeyMiddleware:
    """401 unless ``Authorization`` is exactly the key; then latency, then fast routes."""

    def __init__(
        self, app: ASGIApp, sandbox: Sandbox, fast_routes: Mapping[str, Handler] | None = None
    ) -> None:
        self.app = app
        self.sandbox = sandbox
        self._key = sandbox.config.api_key.get_secret_value().encode("utf-8")
        self._fast = dict(fast_routes or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the key of API requests; pass everything else through."""
        if scope["type"] != "http" or not scope["path"].startswith(_PREFIX):
            await self.app(scope, receive, send)
            return
        if not self._authorized(scope["headers"]):
            response: Response = JSONResponse(envelope(401, "Invalid API key"), status_code=401)
            await response(scope, receive, send)
            return
        sandbox = self.sandbox
        delay = sandbox.faults.latency_s(sandbox.config)
        if delay:
            await asyncio.sleep(delay)
        handler = self._fast.get(scope["path"]) if scope["method"] == "POST" else None
        if handler is None:
            await self.app(scope, receive, send)
            return
        try:
            response = await handler(Request(scope, receive))
        except ApiError as exc:
            response = exc.response()
        await response(scope, receive, send)

    def _authorized(self, headers: list[tuple[bytes, Any]]) -> bool:
        for name, value in headers:
            if name == b"authorization":
                return hmac.compare_digest(value, self._key)
        return False
