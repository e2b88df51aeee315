"""The typed async client of the Messaging Session Service.

``ServiceClient`` wraps an ``httpx.AsyncClient`` (over aiohttp by default, see
:mod:`scheduler.service.transport`) and answers with the models of
:mod:`scheduler.service.responses`. Every failure is an exception of
:mod:`scheduler.service.exceptions`; no httpx or aiohttp exception reaches a caller, and the
API key never appears in an exception, a repr or a log line.

Sends: ``send`` and ``send_text`` (:mod:`scheduler.service.sends_client`) validate a body
model, then use :meth:`ServiceClient.send_prepared`, the lean hot path for bodies validated
at plan time.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any, Self, TypeVar

import httpx
from pydantic import ValidationError

from scheduler.core.errors import ConfigError
from scheduler.core.timeutil import epoch_s
from scheduler.service import requests as rq
from scheduler.service.account_client import AccountCalls
from scheduler.service.bodies import build, session_path
from scheduler.service.calls_client import CallCalls
from scheduler.service.catalog_client import CatalogCalls
from scheduler.service.exceptions import (
    InvalidRequest,
    RequestRejected,
    UnexpectedResponse,
    error_for_answer,
    rejection_for_body,
    validation_problems,
)
from scheduler.service.members_client import MemberCalls
from scheduler.service.responses import (
    Ack,
    Limits,
    QrCode,
    RejectCallResult,
    SendResult,
    SessionRecord,
    parse_send_result,
    session_list,
)
from scheduler.service.sends_client import SendCalls
from scheduler.service.templates_client import TemplateCalls
from scheduler.service.transport import TransportKind, make_transport, no_answer
from scheduler.settings.load import DEFAULT_HTTP_CONCURRENCY, DEFAULT_HTTP_TIMEOUT_S, Settings

logger = logging.getLogger("scheduler.service")
API = rq.API
Answer = TypeVar("Answer")  # what a reader makes of an answer's JSON (a model, a list of them)
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_MIGRATION_CODE = re.compile(rq.MIGRATION_CODE_PATTERN)


class ServiceClient(
    SendCalls, MemberCalls, AccountCalls, CatalogCalls, CallCalls, TemplateCalls
):
    """Typed async client of the service (``async with``); mixins add the other areas."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = DEFAULT_HTTP_TIMEOUT_S,
        concurrency: int = DEFAULT_HTTP_CONCURRENCY,
        transport: TransportKind = "aiohttp",
        clock: Callable[[], float] = epoch_s,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not api_key:
            raise ConfigError("the API key is empty")
        if timeout_s <= 0 or concurrency < 1:
            raise ConfigError("timeout_s must be > 0 and concurrency >= 1")
        self.base_url = base_url.rstrip("/")
        self.transport_kind: TransportKind = transport
        #: Seconds a request may take, connections in the pool (kept by ``for_another_loop``).
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        self._key = api_key
        self._clock = clock
        timeout = httpx.Timeout(timeout_s)
        try:
            self._transport = make_transport(transport, concurrency=concurrency, timeout=timeout)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._post_headers = {"Authorization": api_key, "Content-Type": "application/json"}
        #: The underlying httpx client, for endpoints this class does not wrap.
        self.http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, transport=self._transport,
            headers={"Authorization": api_key, "Accept": "application/json"},
            follow_redirects=False, trust_env=False,
        )

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> ServiceClient:
        """A client from the settings (base URL, key, time-out, concurrency)."""
        service = settings.service_endpoint()
        if service is None:
            raise ConfigError("no service configured: set CAMPAIGN_BASE_URL and "
                              "CAMPAIGN_API_KEY (or api_key_file)")
        options = {"timeout_s": settings.http_timeout_s,
                   "concurrency": settings.http_concurrency, **overrides}
        return cls(*service, **options)

    def for_another_loop(self) -> ServiceClient:
        """A new client with the same address, key, transport, time-out and concurrency: its
        own connection pool, for another event loop (a pool belongs to the loop that first
        used it)."""
        return ServiceClient(self.base_url, self._key, timeout_s=self.timeout_s,
                             concurrency=self.concurrency, transport=self.transport_kind,
                             clock=self._clock)

    def __repr__(self) -> str:
        return f"ServiceClient(base_url={self.base_url!r}, transport={self.transport_kind!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    # ------------------------------------------------------------------ plumbing and sessions

    def _check_answer(self, status: int, headers: Any, content: bytes, path: str) -> None:
        """Raise the service error for an error or unexpected status."""
        if status >= 400:
            raise error_for_answer(
                status, headers, content, path=path, secret=self._key, now=self._clock
            )
        if not 200 <= status < 300:
            raise UnexpectedResponse(f"{path}: unexpected HTTP {status}")

    async def _request(
        self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None
    ) -> httpx.Response:
        """One request through the httpx client, errors mapped, 2xx guaranteed."""
        content = None if body is None else _encode(body).encode()
        headers = None if body is None else {"Content-Type": "application/json"}
        try:
            response = await self.http.request(
                method, path, content=content, headers=headers, params=params
            )
        except httpx.HTTPError as exc:
            raise no_answer(exc, method, path, self.base_url, self._key) from None
        logger.debug("%s %s -> HTTP %s", method, path, response.status_code)
        self._check_answer(response.status_code, response.headers, response.content, path)
        return response

    async def _call(self, method: str, path: str, reader: Callable[[Any], Answer],
                    body: Any = None) -> Answer:
        """A JSON request read by ``reader``; ``success: false`` or a wrong shape is an error."""
        response = await self._request(method, path, body=body)
        try:
            data = json.loads(response.content) if response.content else {}
        except ValueError:
            raise UnexpectedResponse(f"{method} {path}: the answer is not JSON") from None
        if isinstance(data, dict) and data.get("success") is False:
            raise rejection_for_body(response.status_code, data, path=path, secret=self._key)
        try:
            return reader(data)
        except ValidationError as exc:
            problem = validation_problems(exc)
        except ValueError as exc:
            problem = str(exc)
        raise UnexpectedResponse(f"{path}: the answer does not have the expected shape: {problem}")

    async def create_session(
        self, session_id: str, *, webhook_url: str | None = None,
        webhook_config: rq.WebhookConfig | dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None, provider: str | None = None,
        connection_mode: str | None = None, pair_phone: str | None = None,
        history_sync: bool | None = None, ignore_groups: bool | None = None,
        ignore_status: bool | None = None,
    ) -> SessionRecord:
        """``POST /api/v1/sessions``: create a session (``type: unofficial``)."""
        body = build(
            rq.CreateSessionBody, sessionId=session_id, webhookUrl=webhook_url,
            webhookConfig=webhook_config, metadata=metadata, provider=provider,
            connectionMode=connection_mode, pairPhone=pair_phone, historySync=history_sync,
            ignoreGroups=ignore_groups, ignoreStatus=ignore_status,
        )
        return await self._call("POST", f"{API}/sessions",
                                lambda d: SessionRecord.from_body(d, session_id),
                                rq.wire_body(body))

    async def list_sessions(self) -> list[SessionRecord]:
        """``GET /api/v1/sessions``: the sessions of the account."""
        return await self._call("GET", f"{API}/sessions", session_list)

    async def get_session(self, session_id: str) -> SessionRecord:
        """``GET /api/v1/sessions/{sessionId}``: one session and its status."""
        return await self._call("GET", session_path(session_id),
                                lambda d: SessionRecord.from_body(d, session_id))

    async def get_qr(self, session_id: str) -> QrCode:
        """``GET /api/v1/sessions/{sessionId}/qr``: the QR code as JSON."""
        return await self._call("GET", session_path(session_id, "/qr"), QrCode.model_validate)

    async def get_qr_png(self, session_id: str) -> bytes:
        """``GET /api/v1/sessions/{sessionId}/qr?image=1``: the QR code as PNG bytes."""
        path = session_path(session_id, "/qr")
        response = await self._request("GET", path, params={"image": "1"})
        if not response.content.startswith(_PNG_MAGIC):
            raise UnexpectedResponse(f"GET {path}?image=1: the answer is not a PNG image")
        return response.content

    async def _ack(self, path: str, body: Any) -> Ack:
        return await self._call("POST", path, Ack.model_validate, body)

    async def set_webhook(self, session_id: str, webhook_url: str) -> Ack:
        """``POST /api/v1/sessions/{sessionId}/webhook``: change the webhook address."""
        body = build(rq.SetWebhookBody, webhookUrl=webhook_url)
        return await self._ack(session_path(session_id, "/webhook"), rq.wire_body(body))

    async def set_call_settings(self, session_id: str, *, reject_calls: bool | None = None,
                                reject_calls_message: str | None = None) -> Ack:
        """``POST /api/v1/sessions/{sessionId}/call-settings``: auto-reject incoming calls."""
        body = build(rq.CallSettingsBody, rejectCalls=reject_calls,
                     rejectCallsMessage=reject_calls_message)
        return await self._ack(session_path(session_id, "/call-settings"), rq.wire_body(body))

    async def set_mark_previous_as_read(self, session_id: str, enabled: bool) -> Ack:
        """``POST .../mark-previous-as-read-settings``: the ``markPreviousAsRead`` setting."""
        body = build(rq.MarkPreviousAsReadBody, markPreviousAsRead=enabled)
        path = session_path(session_id, "/mark-previous-as-read-settings")
        return await self._ack(path, rq.wire_body(body))

    async def forward_passkey(self, session_id: str, assertion: dict[str, Any]) -> Ack:
        """``POST /api/v1/sessions/{sessionId}/auth/passkey``: forward a WebAuthn assertion."""
        if not isinstance(assertion, dict) or not assertion:
            raise InvalidRequest("the passkey assertion must be a non-empty JSON object")
        return await self._ack(session_path(session_id, "/auth/passkey"), assertion)

    async def migrate_session(self, code: str, **fields: Any) -> Ack:
        """``POST /api/v1/session-migration/migrate``; ``fields`` by wire name (jid, lid, …).

        The one-time code (8 of ``A-Z0-9``) is checked before anything is sent.
        """
        if not isinstance(code, str) or not _MIGRATION_CODE.fullmatch(code):
            raise InvalidRequest("the migration code must be exactly 8 characters of A-Z and 0-9")
        body = build(rq.MigrationBody, code=code, **fields)
        return await self._ack(f"{API}/session-migration/migrate", rq.wire_body(body))

    async def reject_call(self, session_id: str, call_id: str, from_jid: str) -> RejectCallResult:
        """``POST /api/v1/calls/reject``; ``from_jid`` exactly as ``call.offer`` gave it."""
        body = build(rq.RejectCallBody, sessionId=session_id, callId=call_id, **{"from": from_jid})
        return await self._call("POST", f"{API}/calls/reject", RejectCallResult.model_validate,
                                rq.wire_body(body))

    async def get_limits(self, session_id: str) -> Limits:
        """``GET /api/v1/limits/{sessionId}``; no limits known when the endpoint is not offered."""
        path = session_path(session_id, root="limits")
        try:
            return await self._call("GET", path, Limits.from_body)
        except RequestRejected as exc:
            if exc.status == 404 and type(exc) is RequestRejected:
                return Limits()
            raise

    # ------------------------------------------------------------------ sends

    async def _post_bytes(self, path: str, payload: bytes) -> tuple[int, bytes]:
        """POST JSON bytes through the fast transport; an error status is raised mapped.

        The hot path of every send (``send_prepared``, ``post_prepared``)."""
        try:
            status, headers, content = await self._transport.post_json(
                self.base_url + path, payload, self._post_headers
            )
        except httpx.HTTPError as exc:
            raise no_answer(exc, "POST", path, self.base_url, self._key) from None
        if status != 200:
            self._check_answer(status, headers, content, path)
        return status, content

    async def send_prepared(self, path: str, body: dict[str, Any]) -> SendResult:
        """POST a send body already validated at plan time: the dispatcher's hot path."""
        try:
            payload = _encode(body).encode()
        except (TypeError, ValueError) as exc:
            raise InvalidRequest(f"POST {path}: body is not JSON-serialisable ({exc})") from None
        status, content = await self._post_bytes(path, payload)
        try:
            result = parse_send_result(content)
        except ValidationError:
            raise UnexpectedResponse(
                f"POST {path}: HTTP {status} answer is not a send result"
            ) from None
        if result.success is False:
            raise rejection_for_body(status, json.loads(content), path=path, secret=self._key)
        return result
