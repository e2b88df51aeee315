"""The ``[metrics]`` settings: ``campaign serve``'s own ``/metrics`` port, and the token a
scraper from another machine sends.

The ``[metrics]`` section of :class:`~scheduler.settings.load.Settings`::

    [metrics]
    serve = false          # true: `campaign serve` answers GET /metrics on host:port
    host = "127.0.0.1"     # another address needs token_sha256 (below)
    port = 8792
    token_sha256 = "…"     # SHA-256 (hex) of a bearer token; a scraper from another
                           # machine sends `Authorization: Bearer TOKEN`

The dashboard answers ``/metrics`` on its own port too, with the same rule: from this
machine (loopback client and ``Host``) without a token, from elsewhere only with the
token. The webhook receiver's port never answers it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Where ``campaign serve``'s metrics listen unless ``config.toml`` says otherwise.
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8792
_SHA256 = re.compile(r"[0-9a-f]{64}")


class MetricsSettings(BaseModel):
    """The ``[metrics]`` settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    serve: bool = Field(False, description="`campaign serve` answers /metrics on this host "
                        "and port (never on the webhook receiver's).")
    host: str = Field(DEFAULT_HOST, description="The address serve's /metrics listens on.")
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="Its port (0: a free one).")
    token_sha256: str | None = Field(
        None, description="SHA-256 (64 hex digits) of the bearer token a scraper from "
                          "another machine sends; none: /metrics answers loopback only.",
        repr=False)

    @field_validator("token_sha256")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().lower()
        if not _SHA256.fullmatch(value):
            raise ValueError("not a SHA-256 in hex (64 digits 0-9a-f): make one with "
                             "`printf %s \"$TOKEN\" | sha256sum`")
        return value

    def address(self, port: int | None = None) -> str:
        """``http://host:port/metrics`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/metrics"
