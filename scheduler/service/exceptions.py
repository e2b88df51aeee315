"""Errors of the service client; no httpx exception ever reaches a caller.

Tree::

    SchedulerError                      (scheduler/errors.py)
    └── ServiceError                    any failure talking to the service
        ├── InvalidRequest              refused locally before sending (e.g. a bad migration code)
        ├── NoAnswer                    the service never answered: retryable
        │   ├── ServiceUnreachable      connection refused / DNS / reset
        │   └── ServiceTimeout          connect, read or write time-out
        └── ServiceHTTPError            the service answered with an error status
            ├── AuthenticationError     401/403: fatal for the whole run
            │   ├── Unauthorized        401, missing or invalid key
            │   └── Forbidden           403, a member without rights
            ├── RateLimited             429, carries ``retry_after`` seconds: retryable
            ├── ServerError             5xx: retryable
            └── RequestRejected         any other 4xx, with the service's ``error`` text
                └── SessionNotFound     404 ``Session not found``
"""

from __future__ import annotations

from typing import Any

from scheduler.errors import SchedulerError


class ServiceError(SchedulerError):
    """Any failure talking to the service."""

    retryable: bool = False


class InvalidRequest(ServiceError):
    """The request was refused locally, before anything was sent."""


class NoAnswer(ServiceError):
    """The service did not answer at all (connection failure or time-out)."""

    retryable = True


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
