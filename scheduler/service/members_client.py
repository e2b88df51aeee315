"""Account members with per-session permissions: models and the client's calls (``MemberCalls``).

The interface documents ``POST`` (add), ``PUT`` (update) and ``DELETE`` (remove, its body
sent with the DELETE) at ``/api/v1/account/members``; the answers, the permission values
beyond ``read`` and their meaning were found nowhere (ours, ``docs/service-facts.md``): a member
answer is ``{success, data: {user_id, name, email, permission, sessions}}``, ``read`` may
list and read, ``write`` may also send, and a member's key sees only its ``sessions``.
Listing the members (``GET`` on the same path, ``{success, data: [member, ...]}``) is ours
too: a service without it answers 404 or 405, which :meth:`MemberCalls.list_members` says.

:class:`MemberCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, Field, TypeAdapter

from scheduler.service.bodies import build
from scheduler.service.exceptions import RequestRejected
from scheduler.service.requests import API, WireModel, wire_body
from scheduler.service.responses import ResponseModel

Answer = TypeVar("Answer")

MEMBERS_PATH = f"{API}/account/members"
#: The permissions a member may have: ``read`` lists and reads, ``write`` also sends.
Permission = Literal["read", "write"]
PERMISSIONS: tuple[Permission, ...] = ("read", "write")
#: A plain e-mail address: one ``@``, no spaces, a dot in the domain.
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s.]+$"
_EMAIL = re.compile(EMAIL_PATTERN)


def _valid_email(value: str) -> str:
    value = value.strip()
    if not _EMAIL.match(value):
        raise ValueError("not an e-mail address (name@example.com)")
    return value


def _valid_sessions(value: list[str]) -> list[str]:
    if any(not item for item in value):
        raise ValueError("session ids must not be empty")
    return list(dict.fromkeys(value))


Email = Annotated[str, AfterValidator(_valid_email)]
SessionIds = Annotated[list[str], AfterValidator(_valid_sessions)]


class AddMemberBody(WireModel):
    """``POST /api/v1/account/members``: a new member with a permission on some sessions."""

    name: str = Field(min_length=1)
    email: Email
    permission: Permission
    sessions: SessionIds


class UpdateMemberBody(WireModel):
    """``PUT /api/v1/account/members``: a member's new permission and sessions."""

    user_id: int = Field(ge=1)
    permission: Permission
    sessions: SessionIds


class RemoveMemberBody(WireModel):
    """``DELETE /api/v1/account/members`` (the body travels with the DELETE)."""

    user_id: int = Field(ge=1)


class Member(ResponseModel):
    """One account member as the service answers it."""

    user_id: int
    name: str | None = None
    email: str | None = None
    permission: str | None = None
    sessions: list[str] = Field(default_factory=list)


class MemberResult(ResponseModel):
    """Answer of add, update and remove: ``{success, data: member}``."""

    success: bool | None = None
    data: Member


_MEMBER_LIST = TypeAdapter(list[Member])


def member_list(raw: Any) -> list[Member]:
    """The members of a list answer (``{success, data: [...]}`` or a bare list)."""
    items = raw.get("data") if isinstance(raw, dict) else raw
    return _MEMBER_LIST.validate_python(items)


class MemberCalls:
    """The ``/api/v1/account/members`` endpoints; mixed into ``ServiceClient``."""

    if TYPE_CHECKING:

        async def _call(
            self, method: str, path: str, reader: Callable[[Any], Answer], body: Any = None
        ) -> Answer: ...

    async def list_members(self) -> list[Member]:
        """``GET /api/v1/account/members`` (ours): every member of the account."""
        try:
            return await self._call("GET", MEMBERS_PATH, member_list)
        except RequestRejected as exc:
            if exc.status in (404, 405):
                raise RequestRejected(
                    exc.status, "this service does not list account members "
                    f"({exc.error})", path=exc.path, body=exc.body) from None
            raise

    async def add_member(
        self, name: str, email: str, permission: Permission, sessions: Sequence[str]
    ) -> Member:
        """``POST /api/v1/account/members``; e-mail and permission checked before sending."""
        body = build(AddMemberBody, name=name, email=email, permission=permission,
                     sessions=list(sessions))
        return (await self._call("POST", MEMBERS_PATH, MemberResult.model_validate,
                                 wire_body(body))).data

    async def update_member(
        self, user_id: int, permission: Permission, sessions: Sequence[str]
    ) -> Member:
        """``PUT /api/v1/account/members``: replace a member's permission and sessions."""
        body = build(UpdateMemberBody, user_id=user_id, permission=permission,
                     sessions=list(sessions))
        return (await self._call("PUT", MEMBERS_PATH, MemberResult.model_validate,
                                 wire_body(body))).data

    async def remove_member(self, user_id: int) -> Member:
        """``DELETE /api/v1/account/members`` with ``{user_id}`` as its body."""
        body = build(RemoveMemberBody, user_id=user_id)
        return (await self._call("DELETE", MEMBERS_PATH, MemberResult.model_validate,
                                 wire_body(body))).data
