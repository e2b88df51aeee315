"""The ``[api]`` settings: where ``campaign api`` listens, and whether ``campaign serve``
serves the HTTP API too.

The ``[api]`` section of :class:`~scheduler.settings.load.Settings`::

    [api]
    host = "127.0.0.1"     # another address needs at least one token (campaign api-token)
    port = 8791
    serve = false          # true: `campaign serve` serves /api/v1 on this port too
                           # (never on the webhook receiver's port)

Tokens are not settings: they live in the ledger, as hashes (``campaign api-token``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from scheduler.settings.dashboard import LOOPBACK

#: Where the API listens unless ``config.toml`` says otherwise.
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8791
__all__ = ["LOOPBACK", "ApiSettings"]


class ApiSettings(BaseModel):
    """The ``[api]`` settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(DEFAULT_HOST, description="The address /api/v1 listens on.")
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="Its port (0: a free one).")
    serve: bool = Field(False, description="`campaign serve` serves the API too, on this "
                        "host and port (never on the webhook receiver's).")
    failed_auth_per_minute: int = Field(
        10, ge=1, le=10_000, description="Requests with a wrong, revoked or missing token a "
                                         "client may make per minute before 429.")

    def address(self, port: int | None = None) -> str:
        """``http://host:port`` of the API (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}"
