"""The API gateway of the sandbox, as raw ASGI: key check, injected latency, fast sends.

Every ``/api/v1`` request must carry ``Authorization: <key>`` (401 ``Invalid API key``
otherwise, unknown paths included). A member's own key is then held to its permission and
sessions (:mod:`scheduler.sandbox.members`; it lists only its sessions). Send endpoints
are then dispatched straight to their handlers, skipping route matching and dependency
solving: they are the hot path of benchmarks. Everything else goes through the FastAPI app as usual.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scheduler.sandbox.common import ApiError, envelope
from scheduler.sandbox.members import MemberRecord, body_fields, verdict

if TYPE_CHECKING:
    from scheduler.sandbox.world import Sandbox

log = logging.getLogger("scheduler.sandbox.app")
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
        key = self._key_of(scope["headers"])
        member = None
        if key is None or not hmac.compare_digest(key, self._key):
            member = self.sandbox.members.by_key(key) if key is not None else None
            if member is None:
                response: Response = JSONResponse(envelope(401, "Invalid API key"),
                                                  status_code=401)
                await response(scope, receive, send)
                return
        sandbox = self.sandbox
        if member is not None:
            receive, answer = await self._member_check(member, scope, receive)
            if answer is not None:
                await answer(scope, receive, send)
                return
        delay = sandbox.faults.latency_s(sandbox.config)
        if delay:
            if member is None and scope["method"] not in ("GET", "HEAD"):
                # the request is read first, as the service reads it: a client that goes
                # away during the latency (killed, timed out) does not undo its send
                raw = await _read_all(receive)
                if raw is None:  # gone before its request arrived whole: nothing taken
                    log.info("client went away before its request was read: %s %s "
                             "(nothing done)", scope["method"], scope["path"])
                    return
                receive = _replay(raw, receive)
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

    @staticmethod
    def _key_of(headers: list[tuple[bytes, Any]]) -> bytes | None:
        for name, value in headers:
            if name == b"authorization":
                return bytes(value)
        return None

    async def _member_check(
        self, member: MemberRecord, scope: Scope, receive: Receive
    ) -> tuple[Receive, Response | None]:
        """A member's request: the body read (and replayed), then its verdict; the session
        list of a member is answered here, with its own sessions only."""
        method, path = scope["method"], scope["path"]
        body: Any = None
        if method not in ("GET", "HEAD"):
            chunks = []
            more = True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            raw = b"".join(chunks)
            content_type = next((v.decode("latin-1") for k, v in scope["headers"]
                                 if k == b"content-type"), "")
            body = body_fields(raw, content_type)
            receive = _replay(raw, receive)
        # an unreadable body goes on to its handler, which refuses it (400) for anyone
        refused = None if body is None and method not in ("GET", "HEAD") else verdict(
            member, method, path, body)
        if refused is not None:
            return receive, refused.response()
        if method == "GET" and path.rstrip("/") == "/api/v1/sessions":
            sessions = self.sandbox.world.sessions
            data = [sessions[s].record() for s in member.sessions if s in sessions]
            return receive, JSONResponse({"success": True, "data": data})
        return receive, None


async def _read_all(receive: Receive) -> bytes | None:
    """The whole body of a request; ``None`` when the client went away before it arrived."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(raw: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``raw`` as the whole body, then defers to ``receive``."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return replay
