"""Bearer authentication of ``/api/v1``: a token of ``campaign api-token`` in
``Authorization: Bearer …``; a viewer reads, an operator also acts; failed attempts limited.

No token, an unknown or revoked one: 401 (with ``WWW-Authenticate: Bearer``). A viewer on an
action route: 403. A client (its address) that sent :attr:`ApiSettings.failed_auth_per_minute
<scheduler.settings.api.ApiSettings.failed_auth_per_minute>` failed attempts in the last
minute gets 429 (with ``Retry-After``) before its token is even looked at, until the oldest
of them is a minute old. The token is never logged nor echoed in an answer.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import HTTPException, Request

from scheduler.ledger.api_tokens import TokenInfo, authenticate

#: The window of the failed-attempt limit.
WINDOW_S = 60.0
#: How many clients' failures are kept at most (beyond it, those with none in the window
#: are dropped first): many addresses cannot grow the table without bound.
MAX_CLIENTS = 10_000


@dataclass
class FailureLimit:
    """Failed authentications per client in a sliding minute (``monotonic`` injected)."""

    per_minute: int
    monotonic: Callable[[], float]
    _seen: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._seen.setdefault(client, deque())
        while times and now - times[0] >= WINDOW_S:
            times.popleft()
        return times

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again, None when it may now."""
        now = self.monotonic()
        with self._lock:
            times = self._recent(client, now)
            if len(times) < self.per_minute:
                if not times:
                    self._seen.pop(client, None)  # the table holds only recent failures
                return None
            return max(WINDOW_S - (now - times[0]), 1.0)

    def failed(self, client: str) -> None:
        """Count a failed attempt of ``client``."""
        now = self.monotonic()
        with self._lock:
            if client not in self._seen and len(self._seen) >= MAX_CLIENTS:
                for other in list(self._seen):
                    if not self._recent(other, now):
                        del self._seen[other]
                if len(self._seen) >= MAX_CLIENTS:  # all recent: the oldest one goes
                    del self._seen[min(self._seen, key=lambda c: self._seen[c][-1])]
            self._recent(client, now).append(now)


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


def bearer_token(request: Request) -> str | None:
    """The token of ``Authorization: Bearer TOKEN``, None when there is none."""
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def caller(request: Request) -> TokenInfo:
    """The token the request authenticates with (any role), or 401/429."""
    api = request.app.state.api
    client = request.client.host if request.client else "?"
    wait = api.failures.retry_after(client)
    if wait is not None:
        raise HTTPException(429, detail="too many failed authentications from this address; "
                            f"try again in {wait:.0f} s",
                            headers={"Retry-After": str(int(wait + 0.999))})
    token = bearer_token(request)
    if token is None:
        api.failures.failed(client)
        raise _unauthorized("an API token is needed: send 'Authorization: Bearer TOKEN' "
                            "(make one with `campaign api-token create`)")
    info = authenticate(api.ledger().engine, token, api.clock())
    if info is None:
        api.failures.failed(client)
        raise _unauthorized("the API token is unknown or revoked")
    return info


def operator(request: Request) -> TokenInfo:
    """The token of a request to an action route: an operator's, else 403 (401/429 as
    :func:`caller`)."""
    info = caller(request)
    if info.role != "operator":
        raise HTTPException(403, detail=f"token {info.name!r} is a viewer's: it reads, it "
                            "cannot act (an operator's token can)")
    return info
