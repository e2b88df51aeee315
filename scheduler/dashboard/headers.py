"""Headers on every response of the dashboard, and the last line of defence.

:class:`Headers` is the outermost middleware (pure ASGI, so it sees streamed responses and
the auth middleware's refusals too). It adds:

- ``Server-Timing: app;dur=<ms>``: the server's time until the response started (a live
  stream's: until its headers);
- security headers: a CSP that allows only the dashboard's own files (no inline script or
  style, no framing), ``X-Frame-Options: DENY``, ``nosniff``, ``Referrer-Policy``, and
  ``Cache-Control: no-store`` on everything but the static files.

An exception nothing else handled becomes a plain 500 page that says the dashboard hit a
bug (never a traceback); the traceback goes to the server's log.
"""

from __future__ import annotations

import logging

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scheduler.core.timeutil import monotonic

logger = logging.getLogger("scheduler.dashboard")

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
       "object-src 'none'")
SECURITY = (
    ("Content-Security-Policy", CSP),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Permissions-Policy", "camera=(), microphone=(), geolocation=()"),
)
#: The page of a bug (static: nothing of the request is echoed).
BUG_PAGE = (b"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Error"
            b"</title><link rel=\"stylesheet\" href=\"/static/app.css\"></head><body><main>"
            b"<h1>Something went wrong</h1><p>The dashboard hit an error it did not expect "
            b"(a bug): the details are in the log of the process serving it. Nothing was "
            b"changed by this request's failure itself; <a href=\"/\">back to the overview"
            b"</a>.</p></main></body></html>")


def timing(started: float) -> str:
    """The ``Server-Timing`` value for a response that started ``started`` (monotonic)."""
    return f"app;dur={(monotonic() - started) * 1000:.1f}"


class Headers:
    """ASGI middleware: timing and security headers, and a 500 page for a bug."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = monotonic()
        static = scope.get("path", "").startswith("/static/")
        sent = False

        async def send_with_headers(message: Message) -> None:
            nonlocal sent
            if message["type"] == "http.response.start":
                sent = True
                headers = MutableHeaders(scope=message)
                headers["Server-Timing"] = timing(started)
                for name, value in SECURITY:
                    headers.setdefault(name, value)
                if not static:
                    headers.setdefault("Cache-Control", "no-store")
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            logger.exception("dashboard: %s %s failed", scope.get("method"), scope.get("path"))
            if sent:  # the response had started: nothing else can be said
                raise
            await send_with_headers({"type": "http.response.start", "status": 500,
                                     "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                                 (b"content-length",
                                                  str(len(BUG_PAGE)).encode())]})
            await send_with_headers({"type": "http.response.body", "body": BUG_PAGE})
