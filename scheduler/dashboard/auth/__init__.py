"""Who may see and steer the dashboard: logins, roles, sessions, and the rule of the address.

With users configured (``[dashboard.users.NAME]``) every page needs a login; a viewer sees,
an operator also acts. With none, the dashboard answers on a loopback address only
(:func:`check_binding` refuses to start elsewhere, and the middleware refuses a request
whose client or ``Host`` is not loopback, which also stops a DNS-rebinding page), and every
visitor acts as an operator; the page says so (``current_user(request).open_access``,
:data:`OPEN_ACCESS_NOTE`).

What the web part uses: :func:`install` (the middleware, /login and /logout),
:func:`current_user` (:func:`optional_user` where nobody may be signed in, such as an
error page), the dependencies :func:`require_viewer`, :func:`require_operator` and
:func:`check_csrf` (every POST route), :func:`csrf_token` for forms, and
:func:`still_signed_in` for live streams.

Modules: ``guard`` (state and request facts), ``middleware``, ``login`` (routes),
``pages`` (the login page and refusals), ``sessions``, ``ratelimit``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import HTTPException, Request

from scheduler.core.errors import ConfigError, SchedulerError
from scheduler.core.timeutil import Clock, utcnow
from scheduler.dashboard import passwords
from scheduler.dashboard.auth.guard import COOKIE, AuthState, Guard, is_loopback
from scheduler.dashboard.auth.login import router
from scheduler.dashboard.auth.middleware import AuthMiddleware
from scheduler.dashboard.auth.ratelimit import RateLimiter
from scheduler.dashboard.auth.sessions import SessionStore
from scheduler.dashboard.csrf import STATE_KEY, check_csrf, csrf_token
from scheduler.dashboard.users import OPEN_ACCESS_NOTE, HasUsers, User, user_names_problem


def check_binding(host: str, settings: HasUsers) -> None:
    """Refuse to serve on ``host`` when it is not loopback and no users are configured
    (a :class:`SchedulerError` saying what to do); a user name nobody can type is a
    :class:`ConfigError`."""
    problem = user_names_problem(settings.users)
    if problem:
        raise ConfigError(problem)
    if settings.users or is_loopback(host):
        return
    raise SchedulerError(
        f"refusing to serve the dashboard on {host}: it is not a loopback address and no "
        "logins are configured, so anyone who reaches it could pause, cancel and resend. "
        "Add users under [dashboard.users.NAME] in config.toml (a role, and a "
        "password_hash from `campaign dashboard-user hash`), or serve it on 127.0.0.1")


def install(app: Any, settings: HasUsers, *, clock: Clock = utcnow,
            session_idle: timedelta = timedelta(hours=8),
            session_lifetime: timedelta = timedelta(hours=24),
            attempts_per_minute: int = 5, secure_cookies: bool = False,
            hasher: passwords.Hasher | None = None) -> Guard:
    """Add the auth middleware and the /login, /logout routes to the FastAPI ``app``
    (``settings``: the ``[dashboard]`` model); the :class:`Guard` it uses."""
    problem = user_names_problem(settings.users)
    if problem:
        raise ConfigError(problem)
    minute = timedelta(minutes=1)
    guard = Guard(
        settings=settings, clock=clock,
        sessions=SessionStore(clock=clock, idle=session_idle, lifetime=session_lifetime),
        by_client=RateLimiter(attempts_per_minute, minute, clock=clock),
        by_name=RateLimiter(attempts_per_minute, minute, clock=clock),
        hasher=hasher or passwords.hasher(), secure_cookies=secure_cookies)
    app.state.dashboard_guard = guard
    app.include_router(router(guard))
    app.add_middleware(AuthMiddleware, guard=guard)
    return guard


def _state(request: Request) -> AuthState:
    state: AuthState | None = getattr(request.state, STATE_KEY, None)
    if state is None:
        raise RuntimeError("the dashboard's auth middleware is not installed "
                           "(scheduler.dashboard.auth.install)")
    return state


def current_user(request: Request) -> User:
    """Who is asking (401 on a public path when nobody is signed in)."""
    user = _state(request).user
    if user is None:
        raise HTTPException(status_code=401, detail="Sign in to see this page.")
    return user


def optional_user(request: Request) -> User | None:
    """Who is asking, or ``None`` (nobody signed in, or the middleware did not run): for
    what is shown to anyone, such as an error page."""
    state: AuthState | None = getattr(request.state, STATE_KEY, None)
    return state.user if state is not None else None


def require_viewer(request: Request) -> User:
    """Dependency of every page: any signed-in user (or the open-access local operator)."""
    return current_user(request)


def require_operator(request: Request) -> User:
    """Dependency of every action: an operator; a viewer gets 403."""
    user = current_user(request)
    if not user.can_act:
        raise HTTPException(status_code=403, detail=(
            f"{user.name} is a viewer: viewers see everything but cannot pause, resume, "
            "cancel or resend. Ask an operator, or sign in as one."))
    return user


def still_signed_in(request: Request) -> bool:
    """Whether the request's session is still live (a live stream asks before each update,
    so a logout or an expiry ends it)."""
    state = _state(request)
    guard: Guard = request.app.state.dashboard_guard
    session = guard.sessions.get(state.token)
    return session is not None and guard.user_of(session) is not None


__all__ = ["COOKIE", "OPEN_ACCESS_NOTE", "AuthMiddleware", "Guard", "RateLimiter",
           "SessionStore", "User", "check_binding", "check_csrf", "csrf_token",
           "current_user", "install", "is_loopback", "optional_user", "require_operator",
           "require_viewer", "still_signed_in"]
