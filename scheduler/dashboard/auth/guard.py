"""The dashboard's auth state: configured users, sessions, login limits, the hasher, and the
facts about a request it decides on (loopback client and host, https, the cookie)."""

from __future__ import annotations

from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

from starlette.datastructures import Headers
from starlette.types import Scope

# the request facts the rule of the address uses, shared with /metrics (scheduler.metrics)
from scheduler.core.httpserver import client_host as client_host
from scheduler.core.httpserver import host_header as host_header
from scheduler.core.httpserver import is_loopback as is_loopback
from scheduler.core.timeutil import Clock, utcnow
from scheduler.dashboard import passwords
from scheduler.dashboard.auth.ratelimit import RateLimiter
from scheduler.dashboard.auth.sessions import Session, SessionStore
from scheduler.dashboard.users import LOCAL_OPERATOR, HasUsers, User

#: The session cookie's name.
COOKIE = "campaign_dashboard"


def over_https(scope: Scope) -> bool:
    """Whether the browser reached us over https (the scheme, or ``X-Forwarded-Proto``
    from a proxy in front; trusting it only ever adds ``Secure`` to the cookie)."""
    forwarded = Headers(scope=scope).get("x-forwarded-proto", "")
    return scope.get("scheme") == "https" or forwarded.split(",")[0].strip() == "https"


def session_token(scope: Scope) -> str | None:
    """The session token of the request's cookie (``None``: none, or a malformed header)."""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(Headers(scope=scope).get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


@dataclass
class AuthState:
    """What the middleware found for one request (``request.state.dashboard_auth``)."""

    session: Session
    token: str
    user: User | None
    csrf_checked: bool = False
    #: A session made for this request: its cookie goes on the response.
    new_token: str | None = None


@dataclass
class Guard:
    """Users, sessions, login limits and the password hasher of one dashboard app."""

    settings: HasUsers
    clock: Clock = utcnow
    sessions: SessionStore = field(default_factory=SessionStore)
    by_client: RateLimiter = field(default_factory=RateLimiter)
    by_name: RateLimiter = field(default_factory=RateLimiter)
    hasher: passwords.Hasher = field(default_factory=passwords.hasher)
    #: Cookies marked Secure even on plain http (a proxy in front speaks https).
    secure_cookies: bool = False
    decoy: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if not self.decoy:
            self.decoy = passwords.decoy_hash(self.hasher)

    @property
    def open_access(self) -> bool:
        """No users configured: loopback only, and everyone an operator."""
        return not self.settings.users

    def user_of(self, session: Session) -> User | None:
        """The session's user as the settings have them now (no longer configured: none)."""
        if self.open_access:
            return LOCAL_OPERATOR
        entry = self.settings.users.get(session.user) if session.user else None
        if entry is None or session.user is None:
            return None
        return User(name=session.user, role=entry.role)

    def authenticate(self, name: str, password: str) -> User | None:
        """The user when ``password`` is theirs, else ``None``. An unknown name does the
        same Argon2 work as a wrong password (against a decoy hash): timing tells no name."""
        entry = self.settings.users.get(name)
        matched = passwords.verify_password(entry.password_hash if entry else self.decoy,
                                            password, using=self.hasher)
        return User(name=name, role=entry.role) if matched and entry else None

    def cookie(self, token: str, scope: Scope, *, clear: bool = False) -> str:
        """The ``Set-Cookie`` value for ``token``: HttpOnly, SameSite=Strict, Path=/, a
        Max-Age of the session's lifetime, Secure over https (``clear``: delete it)."""
        jar: SimpleCookie = SimpleCookie()
        jar[COOKIE] = "" if clear else token
        morsel = jar[COOKIE]
        morsel["path"] = "/"
        morsel["httponly"] = True
        morsel["samesite"] = "Strict"
        morsel["max-age"] = 0 if clear else self.sessions.max_age_s()
        if self.secure_cookies or over_https(scope):
            morsel["secure"] = True
        return morsel.OutputString()
