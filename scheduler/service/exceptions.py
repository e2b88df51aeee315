"""Errors of the service client; no httpx exception ever reaches a caller.

Tree::

    SchedulerError                      (scheduler/core/errors.py)
    └── ServiceError                    any failure talking to the service
        ├── InvalidRequest              refused locally before sending (e.g. a bad migration code)
        ├── NoAnswer                    the service never answered: retryable; ``maybe_applied``
        │   ├── ServiceUnreachable      connection refused / DNS / reset
        │   └── ServiceTimeout          connect, pool, read or write time-out
        ├── UnexpectedResponse          a 2xx answer whose body cannot be read as promised
        ├── EventParseError             a webhook event of a known name with a malformed shape
        └── ServiceHTTPError            the service answered with an error status
            ├── AuthenticationError     401/403: fatal for the whole run
            │   ├── Unauthorized        401, missing or invalid key
            │   └── Forbidden           403, a member without rights
            ├── RateLimited             429, carries ``retry_after`` seconds: retryable
            ├── ServerError             5xx: retryable
            └── RequestRejected         any other 4xx, with the service's ``error`` text
                ├── SessionNotFound     404 ``Session not found``
                ├── InsufficientBalance 402: the account's wallet cannot pay (SMS, voice)
                └── NotOnCloudApi       an operation an official provider (``cloud_api``)
                                        session does not offer (calls, for one)

A 2xx answer whose JSON body says ``success: false`` is an error too (``RequestRejected``, or
``SessionNotFound`` for ``Session not found``, ``InsufficientBalance`` for ``statusCode: 402``).
The service documents no answer for an empty wallet on a single SMS or call; 402 ``Insufficient
balance`` is the sandbox's (ours). :func:`error_for_answer` turns an HTTP answer
into the right exception; messages never carry the API key (it is scrubbed if echoed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from scheduler.core.errors import SchedulerError


class ServiceError(SchedulerError):
    """Any failure talking to the service."""

    retryable: bool = False


class InvalidRequest(ServiceError):
    """The request was refused locally, before anything was sent."""


class NoAnswer(ServiceError):
    """The service did not answer at all (connection failure or time-out).

    ``maybe_applied`` is False only when the request certainly never reached the service
    (connection refused, connect or pool time-out); otherwise it may have been applied.
    """

    retryable = True

    def __init__(self, message: str, *, maybe_applied: bool = True) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied


class ServiceUnreachable(NoAnswer):
    """The connection could not be made or was dropped."""


class ServiceTimeout(NoAnswer):
    """The service did not answer in time; the request may or may not have been applied."""


class ServiceHTTPError(ServiceError):
    """The service answered with an error status; ``error`` is its own message."""

    def __init__(
        self,
        status: int,
        error: str,
        *,
        path: str = "",
        body: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.error = error
        self.path = path
        self.body = body or {}
        where = f" on {path}" if path else ""
        super().__init__(f"HTTP {status}{where}: {error}")


class AuthenticationError(ServiceHTTPError):
    """401 or 403: the key is missing, wrong, or lacks rights. Stops the run."""


class Unauthorized(AuthenticationError):
    """401: missing or invalid API key."""


class Forbidden(AuthenticationError):
    """403: the key is valid but may not do this."""


class RateLimited(ServiceHTTPError):
    """429: over a rate or plan limit; ``retry_after`` is in seconds when the service said."""

    retryable = True

    def __init__(self, status: int, error: str, *, retry_after: float | None = None,
                 path: str = "", body: dict[str, Any] | None = None) -> None:
        super().__init__(status, error, path=path, body=body)
        self.retry_after = retry_after


class ServerError(ServiceHTTPError):
    """5xx: the service failed; retryable."""

    retryable = True


class RequestRejected(ServiceHTTPError):
    """Any other 4xx: the request itself is wrong; retrying will not help."""


class SessionNotFound(RequestRejected):
    """404 ``Session not found``."""


class InsufficientBalance(RequestRejected):
    """402, or a bulk recipient ``skipped``: the account's wallet ran out (SMS, voice)."""


class NotOnCloudApi(RequestRejected):
    """4xx: the session is an official provider (``cloud_api``) connection, which does not
    offer this operation (the interface: calls); or a template operation on a session that
    is not one. Told by the body's ``code`` (ours) or the words ``cloud_api connection``."""


class UnexpectedResponse(ServiceError):
    """A 2xx answer whose body is not what the endpoint returns (e.g. not JSON, not a PNG)."""


class EventParseError(ServiceError):
    """A webhook event with a known name whose shape does not match its model."""

    def __init__(self, message: str, *, event: str = "", errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.event = event
        self.errors = errors or []


def validation_problems(exc: Any) -> str:
    """A pydantic ``ValidationError`` as one line of ``where: what``, without input values."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
    )


# --------------------------------------------------------------------------- answers → errors

SESSION_NOT_FOUND = "session not found"
#: ``code`` of the sandbox's refusals on or for ``cloud_api`` sessions (ours).
CLOUD_API_CODE = "CLOUD_API_UNSUPPORTED"
PAYMENT_REQUIRED = 402
_MAX_ERROR_TEXT = 300


def parse_retry_after(value: str | None, now: Callable[[], float]) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta-seconds or an HTTP date.

    ``now`` is the clock (epoch seconds) a date is measured against; a date in the past gives
    0; a missing or unreadable value gives ``None``.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and seconds == seconds else None  # NaN is not >= 0
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        return None
    return max(0.0, when.timestamp() - now())


def scrub(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``."""
    if secret and secret in text:
        return text.replace(secret, "***")
    return text


def _error_text(status: int, content: bytes, secret: str | None) -> tuple[str, dict[str, Any]]:
    """The service's ``error`` message and JSON body; a readable fallback for other bodies."""
    body: dict[str, Any] = {}
    try:
        parsed = json.loads(content) if content else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        body = parsed
        for key in ("error", "message", "detail"):
            value = parsed.get(key)
            if isinstance(value, str) and value:
                return scrub(value, secret)[:_MAX_ERROR_TEXT], body
            if value:  # e.g. FastAPI's list of validation problems
                return scrub(json.dumps(value), secret)[:_MAX_ERROR_TEXT], body
        return f"error body without a message ({len(content)} bytes)", body
    text = content.decode("utf-8", "replace").strip()
    if text:
        snippet = " ".join(text.split())[:_MAX_ERROR_TEXT]
        return f"non-JSON error body: {scrub(snippet, secret)}", body
    return f"empty error body (HTTP {status})", body


def error_for_answer(
    status: int,
    headers: Mapping[str, str],
    content: bytes,
    *,
    path: str,
    secret: str | None,
    now: Callable[[], float],
) -> ServiceHTTPError:
    """The exception for an error answer (status >= 400) of the service on ``path``."""
    error, body = _error_text(status, content, secret)
    if status == 401:
        return Unauthorized(status, error, path=path, body=body)
    if status == 403:
        return Forbidden(status, error, path=path, body=body)
    if status == 429:
        retry_after = parse_retry_after(headers.get("Retry-After"), now)
        return RateLimited(status, error, retry_after=retry_after, path=path, body=body)
    if status >= 500:
        return ServerError(status, error, path=path, body=body)
    if status == 404 and error.lower() == SESSION_NOT_FOUND:
        return SessionNotFound(status, error, path=path, body=body)
    if status == PAYMENT_REQUIRED:
        return InsufficientBalance(status, error, path=path, body=body)
    if _about_cloud_api(error, body):
        return NotOnCloudApi(status, error, path=path, body=body)
    return RequestRejected(status, error, path=path, body=body)


def _about_cloud_api(error: str, body: Mapping[str, Any]) -> bool:
    """Whether an error says the operation does not fit the session's kind (``cloud_api``)."""
    return body.get("code") == CLOUD_API_CODE or "cloud_api connection" in error


def rejection_for_body(status: int, body: Mapping[str, Any], *, path: str,
                       secret: str | None) -> RequestRejected:
    """The exception for a 2xx answer whose body says ``success: false``."""
    raw = body.get("error") or body.get("message") or "the service answered success: false"
    error = scrub(str(raw), secret)[:_MAX_ERROR_TEXT]
    cls: type[RequestRejected] = RequestRejected
    if error.lower() == SESSION_NOT_FOUND:
        cls = SessionNotFound
    elif body.get("statusCode") == PAYMENT_REQUIRED or status == PAYMENT_REQUIRED:
        cls = InsufficientBalance
    elif _about_cloud_api(error, body):
        cls = NotOnCloudApi
    return cls(status, error, path=path, body=dict(body))
