"""Who is looking at a dashboard page: a signed-in user, or the open-access local operator.

The logins themselves are settings (``[dashboard.users.NAME]``: a role and an argon2id
hash), :class:`~scheduler.settings.dashboard.DashboardUser`. No users: the dashboard
answers on a loopback address only, and every visitor there acts as an operator (see
:mod:`scheduler.dashboard.auth`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from scheduler.settings.dashboard import DashboardUser

Role = Literal["viewer", "operator"]

#: The longest user name accepted at the login form (longer ones are no user's).
MAX_NAME_CHARS = 64
#: What a page says when no users are configured.
OPEN_ACCESS_NOTE = ("No logins are configured: anyone on this machine acts as an operator. "
                    "Add [dashboard.users] to config.toml to require logins.")


class HasUsers(Protocol):
    """What auth reads of the settings: the ``[dashboard]`` model (or anything with users)."""

    @property
    def users(self) -> Mapping[str, DashboardUser]:
        """The configured logins by name (empty: open on loopback only)."""
        ...


class User(BaseModel):
    """The visitor of a request: a name, a role, and whether they may act."""

    model_config = ConfigDict(frozen=True)

    name: str
    role: Role
    #: No users are configured: anyone reaching the loopback address acts as an operator,
    #: and the page says so (:data:`OPEN_ACCESS_NOTE`).
    open_access: bool = False

    @property
    def can_act(self) -> bool:
        """Whether this visitor may pause, resume, cancel and resend (operators only)."""
        return self.role == "operator"


#: The visitor when no users are configured (loopback only).
LOCAL_OPERATOR = User(name="local", role="operator", open_access=True)


def user_names_problem(users: Mapping[str, DashboardUser]) -> str | None:
    """Why a configured user name cannot sign in (blank, spaces around it, too long);
    ``None`` when every one can."""
    for name in users:
        if not name.strip() or name != name.strip() or len(name) > MAX_NAME_CHARS:
            return (f"dashboard.users: the user name {name[:MAX_NAME_CHARS]!r} cannot sign "
                    f"in (1 to {MAX_NAME_CHARS} characters, no spaces around it)")
    return None
