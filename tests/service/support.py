"""Helpers of the client tests: a real, scriptable HTTP server on loopback (``Scripted``).

``Scripted`` is a tiny FastAPI app served by uvicorn (``BackgroundServer``) that records
every request it gets and answers what the test told it to (status, body, headers), or
holds the request open until the client hangs up (``hang=True``). No mocks, no network
beyond 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response

from scheduler.core.httpserver import BackgroundServer

#: The API key the client tests use (a value that must never be shown).
API_KEY = "sk-test-7f3a9c1e-SECRET"
SEND_OK = {"success": True, "message": "sent", "messageId": "3EB0A1B2C3D4", "timestamp": 1}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@dataclass
class Answer:
    """What the scripted server answers to the next requests."""

    status: int = 200
    content: bytes = json.dumps(SEND_OK).encode()
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


class Scripted:
    """A real server whose answers a test sets, and which records what it received."""

    def __init__(self) -> None:
        self.answer = Answer()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        app = FastAPI()

        @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "DELETE"])
        async def anything(request: Request, path: str) -> Response:
            raw = await request.body()
            answer = self.answer
            with self._lock:
                self.requests.append(
                    {
                        "method": request.method,
                        "path": "/" + path,
                        "query": dict(request.query_params),
                        "headers": dict(request.headers),
                        "body": json.loads(raw) if raw else None,
                    }
                )
            if answer.hang:  # hold the request until the client gives up (at most 10 s)
                for _ in range(200):
                    if await request.is_disconnected():
                        break
                    await asyncio.sleep(0.05)
            return Response(
                answer.content,
                status_code=answer.status,
                media_type=answer.content_type,
                headers=answer.headers,
            )

        self.server = BackgroundServer(app).start()
        self.base_url = self.server.base_url

    def reply(
        self,
        status: int = 200,
        body: Any = None,
        *,
        text: str | None = None,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
        hang: bool = False,
    ) -> None:
        """Answer ``status`` with ``body`` as JSON (or ``text`` as it is) from now on."""
        if text is not None:
            content, kind = text.encode(), content_type or "text/html"
        elif isinstance(body, bytes):
            content, kind = body, content_type or "application/octet-stream"
        else:
            content, kind = (
                json.dumps(SEND_OK if body is None else body).encode(),
                content_type or "application/json",
            )
        self.answer = Answer(status, content, kind, headers or {}, hang)

    def reset(self) -> None:
        """Back to ``200 SEND_OK`` with no recorded requests."""
        self.answer = Answer()
        with self._lock:
            self.requests.clear()

    @property
    def last(self) -> dict[str, Any]:
        """The last request received."""
        with self._lock:
            return self.requests[-1]
