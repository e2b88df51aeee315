"""HTTP transports of the client: httpx's API over aiohttp (default) or over httpx's own.

Chosen by measurement (``benchmarks/client_overhead.py``, figure P0): httpx's own async
transport costs several times the CPU of aiohttp per request, so the default keeps httpx's
client API and hands the socket work to aiohttp through ``httpx-aiohttp``. Both transports
also offer :meth:`post_json`, the lean POST of the send hot path: a prepared JSON body in,
``(status, headers, body)`` out, without building httpx request and response objects on the
aiohttp side. Both pools hold as many connections as the client's concurrency.

Every transport failure leaves as an ``httpx.TransportError`` subclass chosen by what
happened (connect vs read time-out, refused vs dropped); :func:`no_answer` turns those into
the service error tree. ``httpx-aiohttp``'s own mapping reports a refused connection as a
connect *time-out*, so this module maps aiohttp's errors itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import aiohttp
import httpx
import httpx_aiohttp
from yarl import URL

from scheduler.service.exceptions import (
    InvalidRequest,
    NoAnswer,
    ServiceError,
    ServiceTimeout,
    ServiceUnreachable,
    scrub,
)

TransportKind = Literal["aiohttp", "httpx"]
TRANSPORT_KINDS: tuple[TransportKind, ...] = ("aiohttp", "httpx")
#: What :meth:`post_json` returns: HTTP status, case-insensitive headers, raw body.
Reply = tuple[int, Mapping[str, str], bytes]
_URL_CACHE_SIZE = 256


def translate_aiohttp_error(exc: BaseException) -> httpx.TransportError:
    """The httpx exception that says what an aiohttp failure was (never a refusal as time-out)."""
    message = str(exc) or type(exc).__name__
    kind: type[httpx.TransportError]
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout  # waiting for a pooled or new connection: nothing sent
    elif isinstance(exc, aiohttp.SocketTimeoutError):
        kind = httpx.ReadTimeout
    elif isinstance(exc, TimeoutError):
        kind = httpx.TimeoutException
    elif isinstance(exc, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError  # refused, DNS, TLS handshake: nothing sent
    elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        kind = httpx.RemoteProtocolError
    elif isinstance(exc, aiohttp.ClientPayloadError):
        kind = httpx.ReadError
    elif isinstance(exc, aiohttp.InvalidURL):
        kind = httpx.UnsupportedProtocol
    elif isinstance(exc, aiohttp.ClientConnectionError | OSError):
        kind = httpx.NetworkError
    else:
        kind = httpx.TransportError
    return kind(message)


#: Seconds an idle pooled connection is kept. Below the servers' own idle time-outs (uvicorn
#: and Node close after 5 s, nginx after 75 s): with httpx's default of 5 s a request sent on
#: a connection the server was closing that instant failed as "maybe sent", and a whole bulk
#: of up to 1,000 SMS became ``unknown`` (reproduced in benchmarks/README.md, S1).
KEEPALIVE_EXPIRY_S = 2.0


def no_answer(
    exc: httpx.HTTPError, method: str, path: str, base_url: str, secret: str | None
) -> ServiceError:
    """The service error for an httpx failure to get an answer; never shows ``secret``."""
    detail = scrub(f"{type(exc).__name__}: {exc}", secret)
    if isinstance(exc, httpx.UnsupportedProtocol):
        return InvalidRequest(f"{method} {path}: {base_url} is not an http(s) address ({detail})")
    if isinstance(exc, httpx.TimeoutException):
        sent = not isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
        return ServiceTimeout(
            f"{method} {path}: no answer from {base_url} in time ({detail})", maybe_applied=sent
        )
    failure: NoAnswer = ServiceUnreachable(
        f"{method} {path}: cannot reach the service at {base_url} ({detail})",
        maybe_applied=not isinstance(exc, httpx.ConnectError),
    )
    return failure


def _client_timeout(timeout: Mapping[str, float | None]) -> aiohttp.ClientTimeout:
    """aiohttp's time-outs for httpx's: pool wait + connect, socket connect, socket read."""
    return aiohttp.ClientTimeout(
        total=None,
        connect=timeout.get("pool"),
        sock_connect=timeout.get("connect"),
        sock_read=timeout.get("read"),
    )


class AiohttpTransport(httpx_aiohttp.AiohttpTransport):
    """An httpx transport on one aiohttp session, plus the lean :meth:`post_json`."""

    def __init__(self, *, concurrency: int, timeout: httpx.Timeout) -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency,
                             keepalive_expiry=KEEPALIVE_EXPIRY_S)
        super().__init__(limits=limits, trust_env=False)
        self._timeout = _client_timeout(timeout.as_dict())
        self._timeouts: dict[tuple[Any, ...], aiohttp.ClientTimeout] = {}
        self._urls: dict[str, URL] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"AiohttpTransport(max_connections={self.limits.max_connections})"

    def get_client(self) -> aiohttp.ClientSession:
        """A new aiohttp session whose pool holds ``concurrency`` connections."""
        connector = aiohttp.TCPConnector(
            limit=self.limits.max_connections or 0,
            limit_per_host=0,
            keepalive_timeout=self.limits.keepalive_expiry,
            ssl=self.ssl_context,
        )
        return aiohttp.ClientSession(connector=connector, timeout=self._timeout, trust_env=False)

    @property
    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session, opened on first use (inside the running event loop)."""
        client = self.client
        if isinstance(client, aiohttp.ClientSession):
            return client
        if self._closed:
            raise RuntimeError("the HTTP transport is closed")
        client = self.client = self.get_client()
        return client

    def _timeout_for(self, extension: Mapping[str, float | None] | None) -> aiohttp.ClientTimeout:
        if not extension:
            return self._timeout
        key = tuple(sorted(extension.items()))
        found = self._timeouts.get(key)
        if found is None:
            found = self._timeouts[key] = _client_timeout(extension)
        return found

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send an httpx request through aiohttp and answer with the whole body read."""
        session = self.session
        try:
            data: bytes | None = request.content or None
        except httpx.RequestNotRead:
            data = await request.aread() or None
        try:
            response = await session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=data,
                allow_redirects=False,
                auto_decompress=False,  # httpx decodes the body itself
                timeout=self._timeout_for(request.extensions.get("timeout")),
                server_hostname=request.extensions.get("sni_hostname"),
            )
            try:
                content = await response.read()
            finally:
                response.release()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise translate_aiohttp_error(exc) from exc
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode()
        return httpx.Response(
            response.status,
            headers=response.raw_headers,
            content=content,
            request=request,
            extensions=extensions,
        )

    async def post_json(self, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """POST prepared JSON straight through aiohttp: the send hot path."""
        target = self._urls.get(url)
        if target is None:
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()
            target = self._urls[url] = URL(url)
        try:
            response = await self.session.post(
                target, data=body, headers=headers, allow_redirects=False
            )
            try:
                content = await response.read()
            finally:
                response.release()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise translate_aiohttp_error(exc) from exc
        return response.status, response.headers, content

    async def aclose(self) -> None:
        """Close the aiohttp session and its pool."""
        self._closed = True
        client = self.client
        self.client = None
        if isinstance(client, aiohttp.ClientSession):
            await client.close()


class HttpxTransport(httpx.AsyncHTTPTransport):
    """httpx's own async transport (httpcore), plus :meth:`post_json` for comparison."""

    def __init__(self, *, concurrency: int, timeout: httpx.Timeout) -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency,
                             keepalive_expiry=KEEPALIVE_EXPIRY_S)
        super().__init__(limits=limits, trust_env=False)
        self._extensions = {"timeout": timeout.as_dict()}
        self._urls: dict[str, httpx.URL] = {}

    def __repr__(self) -> str:
        return "HttpxTransport()"

    async def post_json(self, url: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """POST prepared JSON through httpcore, skipping the httpx client layer."""
        target = self._urls.get(url)
        if target is None:
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()
            target = self._urls[url] = httpx.URL(url)
        request = httpx.Request(
            "POST", target, headers=headers, content=body, extensions=self._extensions
        )
        response = await self.handle_async_request(request)
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        return response.status_code, response.headers, content


ServiceTransport = AiohttpTransport | HttpxTransport


def make_transport(
    kind: TransportKind, *, concurrency: int, timeout: httpx.Timeout
) -> ServiceTransport:
    """The transport named ``kind`` with a pool of ``concurrency`` connections."""
    if kind == "aiohttp":
        return AiohttpTransport(concurrency=concurrency, timeout=timeout)
    if kind == "httpx":
        return HttpxTransport(concurrency=concurrency, timeout=timeout)
    raise ValueError(f"transport must be one of {', '.join(TRANSPORT_KINDS)}, got {kind!r}")
