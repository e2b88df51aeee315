"""The ``[dashboard]`` settings: where ``campaign dashboard`` listens, whether ``campaign
serve`` serves the pages too, and who may log in.

The ``[dashboard]`` section of :class:`~scheduler.settings.load.Settings` (the dashboard
reads it too)::

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

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Where the dashboard listens unless ``config.toml`` says otherwise.
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8790
#: The addresses that only this machine reaches.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: The PHC string of an argon2id hash (``$argon2id$v=19$m=65536,t=3,p=4$salt$hash``).
_ARGON2ID = re.compile(r"\$argon2id\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+")


class DashboardUser(BaseModel):
    """One login of the dashboard (``[dashboard.users.NAME]``): a role and an argon2id hash.

    Defined with the settings, which hold it, not in the dashboard package (which imports
    the settings); the dashboard's auth uses this class. The hash's shape is checked here;
    argon2-cffi checks it again at login.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["viewer", "operator"] = Field(
        description="viewer: sees every page; operator: may also pause, resume, cancel "
                    "and send again.")
    password_hash: str = Field(description="An argon2id hash (made by the dashboard's "
                               "hash command), never the password itself.", repr=False)

    @field_validator("password_hash")
    @classmethod
    def _argon2id(cls, value: str) -> str:
        value = value.strip()
        if not _ARGON2ID.fullmatch(value):
            raise ValueError("not an argon2id hash: make one with the dashboard's hash "
                             "command and paste all of it ($argon2id$v=19$m=…)")
        return value


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

    def address(self, port: int | None = None) -> str:
        """``http://host:port/`` of the pages (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/"
