"""Small shared pieces of the sandbox: the error envelope, time formats, JIDs and ids."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when an error is answered: the limits of ``campaign senders``
    from starlette.responses import JSONResponse  # read this module without Starlette

USER_SUFFIX = "@s.whatsapp.net"


class ApiError(Exception):
    """An error answered as ``{success:false, error, statusCode}`` (or a custom body)."""

    def __init__(
        self,
        status: int,
        error: str,
        *,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.headers = headers
        self.body = body if body is not None else envelope(status, error)

    def response(self) -> JSONResponse:
        """The HTTP response for this error."""
        from starlette.responses import JSONResponse

        return JSONResponse(self.body, status_code=self.status, headers=self.headers)


def envelope(status: int, error: str) -> dict[str, Any]:
    """The service's general error envelope."""
    return {"success": False, "error": error, "statusCode": status}


def session_not_found() -> ApiError:
    """404 ``Session not found``, as the service says it."""
    return ApiError(404, "Session not found")


def iso_ms(moment: datetime) -> str:
    """ISO 8601 UTC with millisecond precision and a ``Z`` suffix."""
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def epoch_ms(moment: datetime) -> int:
    """Epoch milliseconds of an aware datetime."""
    return int(moment.timestamp() * 1000)


def user_jid(number: str) -> str:
    """The phone-number JID of a number (digits only)."""
    return number + USER_SUFFIX


def number_of(jid: str) -> str:
    """The digits of a JID (``5511...@s.whatsapp.net`` → ``5511...``); other text unchanged."""
    return jid.split("@", 1)[0]


def seeded(seed: int | None, purpose: str) -> random.Random:
    """An independent random stream for one purpose; entropy-seeded when ``seed`` is None."""
    return random.Random(f"{seed}:{purpose}" if seed is not None else None)


class IdFactory:
    """Message, trace, call and command ids, each from its own seeded stream."""

    def __init__(self, seed: int | None) -> None:
        self._messages = seeded(seed, "message-ids")
        self._inbound = seeded(seed, "inbound-ids")
        self._traces = seeded(seed, "trace-ids")
        self._other = seeded(seed, "other-ids")

    def message(self) -> str:
        """A sent-message id in the network's style (upper-case hex)."""
        return f"3EB0{self._messages.getrandbits(72):018X}"

    def inbound(self) -> str:
        """Id of a message a simulated recipient sent."""
        return f"3A{self._inbound.getrandbits(72):018X}"

    def trace(self) -> str:
        """A trace id for an event envelope."""
        return f"{self._traces.getrandbits(64):016x}"

    def call(self) -> str:
        """An incoming call id."""
        return f"{self._other.getrandbits(64):016X}"

    def command(self) -> str:
        """An asynchronous command id."""
        return f"cmd_{self._other.getrandbits(64):016x}"
