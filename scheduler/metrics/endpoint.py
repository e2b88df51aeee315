"""``GET /metrics`` as a raw ASGI middleware: the dashboard's app puts it in front of its
login rules, and ``campaign serve``'s metrics port serves it alone (:func:`metrics_app`).

The rule of the address (the dashboard's, for a scraper that cannot log in): a request
from this machine (loopback client and loopback ``Host``, which also stops a DNS-rebinding
page) is answered; one from elsewhere only with ``Authorization: Bearer TOKEN`` whose
SHA-256 is ``[metrics] token_sha256`` (401 without it or with a wrong one; 403 when no
token is configured). A wrong token is never answered with metrics; a session cookie is
neither needed nor made. The text is built in a worker thread (the ledger's reads are
blocking), with a fresh registry per scrape (:func:`.collector.exposition`); a ledger that
cannot be read answers 503 with the reason, never a partial scrape.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from scheduler.core.httpserver import client_host, host_header, is_loopback
from scheduler.core.timeutil import Clock, utcnow

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings
    from scheduler.settings.metrics import MetricsSettings

PATH = "/metrics"
#: prometheus-client's text format (``prometheus_client.CONTENT_TYPE_LATEST``, without
#: importing it before a scrape).
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
LOOPBACK_ONLY = (b"/metrics answers on this machine's loopback address only: to scrape it "
                 b"from elsewhere, set [metrics] token_sha256 in config.toml and send "
                 b"Authorization: Bearer TOKEN\n")
TOKEN_NEEDED = b"/metrics from another address needs Authorization: Bearer TOKEN\n"


def bearer(scope: Scope) -> str | None:
    """The bearer token of the request's ``Authorization`` header, if any."""
    value = Headers(scope=scope).get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def refusal(scope: Scope, conf: MetricsSettings) -> tuple[int, bytes] | None:
    """Why the request may not read the metrics (status, text), or None: it may."""
    token = bearer(scope)
    if token is not None and conf.token_sha256 is not None:
        digest = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        if hmac.compare_digest(digest, conf.token_sha256):
            return None
        return 401, b"wrong token\n"
    if is_loopback(client_host(scope)) and is_loopback(host_header(scope)):
        return None
    return (401, TOKEN_NEEDED) if conf.token_sha256 else (403, LOOPBACK_ONLY)


class MetricsRoute:
    """Answers ``GET``/``HEAD /metrics`` itself; passes every other request on."""

    def __init__(self, app: ASGIApp, ledger: Ledger, settings: Settings,
                 clock: Clock = utcnow) -> None:
        self.app, self.ledger, self.settings, self.clock = app, ledger, settings, clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != PATH:
            await self.app(scope, receive, send)
            return
        headers = [(b"cache-control", b"no-store")]
        refused = refusal(scope, self.settings.metrics)
        if scope["method"] not in ("GET", "HEAD"):
            status, body = 405, b"use GET\n"
            headers.append((b"allow", b"GET, HEAD"))
        elif refused is not None:
            status, body = refused
            if status == 401:
                headers.append((b"www-authenticate", b'Bearer realm="metrics"'))
        else:
            from scheduler.ledger.exceptions import LedgerError
            from scheduler.metrics.collector import exposition

            try:
                status = 200
                body = await run_in_threadpool(exposition, self.ledger, self.settings,
                                               self.clock)
            except LedgerError as exc:  # the scrape fails, saying why (no figure faked)
                status, body = 503, f"{exc}\n".encode()
        ctype = CONTENT_TYPE if status == 200 else b"text/plain; charset=utf-8"
        headers += [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body",
                    "body": b"" if scope["method"] == "HEAD" else body})


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """Every path but /metrics on serve's metrics port (and its lifespan, answered)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b"not found: this port answers GET /metrics only\n"
    await send({"type": "http.response.start", "status": 404,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def metrics_app(ledger: Ledger, settings: Settings, clock: Clock = utcnow) -> MetricsRoute:
    """An ASGI app answering ``/metrics`` alone (``campaign serve``'s metrics port)."""
    return MetricsRoute(_not_found, ledger, settings, clock)
