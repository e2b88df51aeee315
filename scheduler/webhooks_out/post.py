"""One POST of a delivery with httpx; one try, :class:`PostTry` (status, error), httpx's errors
translated here, at the boundary, into one short line (never the URL's query or a secret).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

#: How much of a refusing receiver's body is kept as the error (one line).
ERROR_CHARS = 200


@dataclass(frozen=True)
class PostTry:
    """One try: the HTTP status (None: no answer) and, unless delivered, why not."""

    status: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        """A 2xx answer delivers the event."""
        return self.status is not None and 200 <= self.status < 300


def _why(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "cannot connect (refused or unreachable)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the receiver closed the connection"
    return f"request failed ({type(exc).__name__})"


async def post(client: httpx.AsyncClient, url: str, body: str,
               headers: dict[str, str]) -> PostTry:
    """POST ``body`` to ``url``; any answer or failure is an :class:`PostTry`."""
    try:
        response = await client.post(url, content=body.encode(), headers=headers)
    except httpx.HTTPError as exc:
        return PostTry(None, _why(exc))
    if 200 <= response.status_code < 300:
        return PostTry(response.status_code, None)
    text = " ".join(response.text.split())[:ERROR_CHARS]
    return PostTry(response.status_code,
                   f"HTTP {response.status_code}" + (f": {text}" if text else ""))
