"""The ``[dashboard]`` settings: where ``campaign dashboard`` listens, whether ``campaign
serve`` serves the pages too, and who may log in.

A leaf module (``config`` reads it, and so does the dashboard), like ``sender_care``::

    [dashboard]
    host = "127.0.0.1"     # another address needs users (below)
    port = 8790
    serve = false          # true: `campaign serve` serves the pages on this port too
                           # (never on the webhook receiver's port)

    [dashboard.users.ana]  # a login; hashes come from `campaign dashboard hash-password`
    role = "operator"      # or "viewer": sees everything, changes nothing
    password_hash = "$argon2id$v=19$..."
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Where the dashboard listens unless ``config.toml`` says otherwise.
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8790
#: The addresses that only this machine reaches.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class DashboardUser(BaseModel):
    """One login of the dashboard (``[dashboard.users.NAME]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["viewer", "operator"] = Field(
        description="viewer: sees every page; operator: may also pause, resume, cancel "
                    "and send again.")
    password_hash: str = Field(description="An argon2 hash (`campaign dashboard "
                               "hash-password`), never the password itself.", repr=False)


class DashboardSettings(BaseModel):
    """The ``[dashboard]`` settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(DEFAULT_HOST, description="The address the pages listen on.")
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="Their port (0: a free one).")
    serve: bool = Field(False, description="`campaign serve` serves the pages too, on this "
                        "host and port (never on the webhook receiver's).")
    users: dict[str, DashboardUser] = Field(
        default_factory=dict, description="Logins by name; none: only a loopback host is "
                                          "allowed, and every visitor is an operator.")

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the pages."""
        return self.host in LOOPBACK

    def address(self, port: int | None = None) -> str:
        """``http://host:port/`` of the pages (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/"
