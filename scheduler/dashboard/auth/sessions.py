"""Dashboard sessions, kept in this process's memory: a random token in a cookie, the rest here.

Every visitor gets a session: an anonymous one carries the CSRF token of the login form
(and, when no users are configured, of every form); signing in replaces it with a new one
(a token known before login is worth nothing after). The store keeps only a SHA-256 of each
token, so a dump of it holds no cookie. A session ends ``idle`` after its last request, or
``lifetime`` after it began, or at logout; a restart of the process ends them all.
Anonymous sessions are bounded (the oldest go first), so cookieless requests cannot fill
the memory, and they never push out a signed-in one. Safe to use from the server's
threads (sync routes run in a thread pool) as from its event loop: one lock.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler.core.timeutil import Clock, utcnow

#: Bytes of randomness in a session token and in a CSRF token.
TOKEN_BYTES = 32


@dataclass
class Session:
    """One visitor's session: who (``None``: not signed in) and its CSRF token."""

    user: str | None
    csrf: str
    started: datetime
    seen: datetime


def _key(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class SessionStore:
    """Sessions by token, with idle and absolute expiry on an injected clock."""

    def __init__(self, *, clock: Clock = utcnow, idle: timedelta = timedelta(hours=8),
                 lifetime: timedelta = timedelta(hours=24),
                 max_anonymous: int = 10_000) -> None:
        self.clock, self.idle, self.lifetime = clock, idle, lifetime
        self.max_anonymous = max_anonymous
        self._signed_in: dict[str, Session] = {}
        self._anonymous: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, user: str | None = None) -> tuple[str, Session]:
        """A new session for ``user`` (``None``: anonymous): its cookie token and itself."""
        with self._lock:
            return self._create(user)

    def _create(self, user: str | None) -> tuple[str, Session]:
        self._sweep()
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = self.clock()
        session = Session(user=user, csrf=secrets.token_urlsafe(TOKEN_BYTES), started=now,
                          seen=now)
        if user is None:
            self._anonymous[_key(token)] = session
            while len(self._anonymous) > self.max_anonymous:
                self._anonymous.popitem(last=False)
        else:
            self._signed_in[_key(token)] = session
        return token, session

    def get(self, token: str | None) -> Session | None:
        """The live session of ``token`` (and it counts as used now); ``None`` when there is
        none or it expired (then it is dropped)."""
        if not token:
            return None
        with self._lock:
            return self._get(_key(token))

    def _get(self, key: str) -> Session | None:
        session = self._signed_in.get(key) or self._anonymous.get(key)
        if session is None:
            return None
        now = self.clock()
        if self._expired(session, now):
            self._drop(key)
            return None
        session.seen = now
        return session

    def end(self, token: str | None) -> None:
        """End ``token``'s session (logout); nothing when there is none."""
        if token:
            with self._lock:
                self._drop(_key(token))

    def max_age_s(self) -> int:
        """The cookie's ``Max-Age``: a session never lives longer than this."""
        return int(self.lifetime.total_seconds())

    def __len__(self) -> int:
        """How many sessions are held (signed in and anonymous)."""
        return len(self._signed_in) + len(self._anonymous)

    def _expired(self, session: Session, now: datetime) -> bool:
        return now - session.seen >= self.idle or now - session.started >= self.lifetime

    def _drop(self, key: str) -> None:
        self._signed_in.pop(key, None)
        self._anonymous.pop(key, None)

    def _sweep(self) -> None:
        """Forget expired signed-in sessions (anonymous ones are bounded by count)."""
        now = self.clock()
        for key in [k for k, s in self._signed_in.items() if self._expired(s, now)]:
            del self._signed_in[key]
