"""Account members of the sandbox: their records, their own API keys, and what each may do.

The owner's key (``config.api_key``) reaches everything. A member's key (issued by the
sandbox: ``POST /sandbox/members/{user_id}/key``, or :meth:`MemberDesk.key_of` in process)
reaches only the member's ``sessions``, and :func:`verdict` decides each request (ours,
``docs/service-facts.md``):

* a session outside the member's list does not exist for it: 404 ``Session not found``;
* ``read`` may list and read (``GET``, and the catalog's read-only ``POST``): else 403;
* ``write`` may also send and change its own sessions;
* the members themselves and everything not tied to a session (creating sessions, SMS, voice,
  account webhooks, migration) are the owner's: 403 for any member, ``GET`` aside.

The session of a request is the path's (``/sessions/{id}``, ``/limits/{id}``,
``/connections/cloud-api/{id}``) or the body's ``sessionId``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

from scheduler.sandbox.common import ApiError, seeded, session_not_found
from scheduler.service.members_client import MEMBERS_PATH

_SESSION_IN_PATH = re.compile(r"^/api/v1/(?:sessions|limits|connections/cloud-api)/([^/]+)")
_SESSIONS_PATH = "/api/v1/sessions"
#: Where sessions are created: a QR session, or a manual cloud_api connection (ours).
_CREATE_PATHS = frozenset({_SESSIONS_PATH, "/api/v1/connections/cloud-api"})
_READ_METHODS = frozenset({"GET", "HEAD"})
#: POSTs that only read (a catalog product): open to ``read`` members on their sessions.
_READ_POSTS = frozenset({"/api/v1/catalog/product/get"})


@dataclass
class MemberRecord:
    """One member: what the API answers, and the member's own key (never answered)."""

    user_id: int
    name: str
    email: str
    permission: str
    sessions: list[str]
    api_key: str = field(repr=False)

    def record(self) -> dict[str, Any]:
        """The member as the service answers it."""
        return {"user_id": self.user_id, "name": self.name, "email": self.email,
                "permission": self.permission, "sessions": list(self.sessions)}


class MemberDesk:
    """The account's members and their keys; ``exists(session_id)`` checks a session."""

    def __init__(self, seed: int | None, exists: Callable[[str], bool]) -> None:
        self._keys = seeded(seed, "member-keys")
        self._exists = exists
        self._next_id = 1
        self.members: dict[int, MemberRecord] = {}

    def _unknown_sessions(self, sessions: Iterable[str]) -> None:
        missing = [s for s in sessions if not self._exists(s)]
        if missing:
            names = ", ".join(missing)
            raise ApiError(400, f"Invalid request: sessions: unknown session(s) {names}")

    def add(self, name: str, email: str, permission: str, sessions: list[str]) -> MemberRecord:
        """A new member (409 when the e-mail is taken, 400 for sessions the account lacks)."""
        if any(m.email.lower() == email.lower() for m in self.members.values()):
            raise ApiError(409, f"A member with e-mail {email} already exists")
        self._unknown_sessions(sessions)
        key = f"mbr_{self._keys.getrandbits(128):032x}"
        member = MemberRecord(self._next_id, name, email, permission, list(sessions), key)
        self.members[member.user_id] = member
        self._next_id += 1
        return member

    def get(self, user_id: int) -> MemberRecord:
        """The member, or 404 ``Member not found``."""
        member = self.members.get(user_id)
        if member is None:
            raise ApiError(404, "Member not found")
        return member

    def update(self, user_id: int, permission: str, sessions: list[str]) -> MemberRecord:
        """Replace a member's permission and sessions."""
        member = self.get(user_id)
        self._unknown_sessions(sessions)
        member.permission = permission
        member.sessions = list(sessions)
        return member

    def remove(self, user_id: int) -> MemberRecord:
        """Remove a member; its key stops working at once."""
        member = self.get(user_id)
        del self.members[user_id]
        return member

    def key_of(self, user_id: int) -> str:
        """The member's own API key (the sandbox's control surface; never in API answers)."""
        return self.get(user_id).api_key

    def by_key(self, key: bytes) -> MemberRecord | None:
        """The member whose key this is, compared in constant time; ``None`` otherwise."""
        digest = hashlib.sha256(key).digest()
        found = None
        for member in self.members.values():
            theirs = hashlib.sha256(member.api_key.encode("utf-8")).digest()
            if hmac.compare_digest(digest, theirs):
                found = member
        return found


_MULTIPART_SESSION = re.compile(rb'name="sessionId"\r\n(?:[^\r\n]+\r\n)*\r\n([^\r\n]*)\r\n')


def body_fields(raw: bytes, content_type: str) -> dict[str, Any] | None:
    """The fields of a request body (JSON, text/plain JSON, urlencoded or multipart form)
    as far as a verdict needs them; ``None`` when it cannot be read (the handler says 400)."""
    if not raw:
        return {}
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/x-www-form-urlencoded":
        return dict(parse_qsl(raw.decode("utf-8", "replace")))
    if kind == "multipart/form-data":
        match = _MULTIPART_SESSION.search(raw)
        return {"sessionId": match.group(1).decode("utf-8", "replace")} if match else {}
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def session_of(path: str, body: Any) -> str | None:
    """The session a request concerns: the path's, else the body's ``sessionId``."""
    match = _SESSION_IN_PATH.match(path)
    if match:
        return unquote(match.group(1))
    if isinstance(body, dict):
        value = body.get("sessionId")
        if isinstance(value, str):
            return value
    return None


def verdict(member: MemberRecord, method: str, path: str, body: Any) -> ApiError | None:
    """Why ``member`` may not make this request (404 or 403), or ``None`` when it may."""
    if path.rstrip("/") == MEMBERS_PATH:
        return ApiError(403, "Forbidden: only the account owner may manage account members")
    if method == "POST" and path.rstrip("/") in _CREATE_PATHS:
        return ApiError(403, "Forbidden: only the account owner may create sessions")
    session_id = session_of(path, body)
    if session_id is not None and session_id not in member.sessions:
        return session_not_found()
    if method in _READ_METHODS or (method == "POST" and path in _READ_POSTS):
        return None
    if member.permission != "write":
        where = f" on session {session_id}" if session_id else ""
        return ApiError(403, f"Forbidden: member {member.email} has {member.permission} "
                             f"permission{where}: it may list and read, not send or change")
    if session_id is None:
        return ApiError(403, "Forbidden: only the account owner may use account-level "
                             "endpoints (sessions are created, SMS, voice and webhooks "
                             "set by the owner)")
    return None
