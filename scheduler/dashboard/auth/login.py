"""The /login and /logout routes.

A login attempt counts against the client's address and against the name typed (5 a minute
each by default); past that the answer is 429 with ``Retry-After``, before any password is
checked. A wrong password and an unknown name get the same answer after the same work.
Signing in replaces the visitor's session (a token known before is worth nothing after).
The CSRF token of both forms is checked by the middleware, and by :func:`check_csrf` here.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Form, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from scheduler.dashboard import passwords
from scheduler.dashboard.auth.guard import AuthState, Guard, client_host
from scheduler.dashboard.auth.pages import page, safe_next
from scheduler.dashboard.auth.ratelimit import attempt_wait
from scheduler.dashboard.csrf import STATE_KEY, check_csrf
from scheduler.dashboard.users import MAX_NAME_CHARS

log = logging.getLogger(__name__)

#: The one answer to a wrong password and to an unknown name.
WRONG = "Wrong user name or password."
#: The longest password read (a longer one is no user's, and costs Argon2 nothing extra).
MAX_PASSWORD_CHARS = 1024


def router(guard: Guard) -> APIRouter:
    """The login and logout routes of ``guard``'s dashboard."""
    routes = APIRouter()

    def _state(request: Request) -> AuthState:
        state: AuthState = getattr(request.state, STATE_KEY)
        return state

    def _form(request: Request, next_page: str, name: str = "") -> dict[str, str]:
        return {"csrf": _state(request).session.csrf, "next": safe_next(next_page),
                "name": name}

    @routes.get("/login", include_in_schema=False)
    def login_form(request: Request, next: str = "/") -> Response:
        """The login form (straight on when already signed in, or when nobody needs to)."""
        if _state(request).user is not None:
            return RedirectResponse(safe_next(next), status_code=303)
        return page(200, "Sign in", form=_form(request, next))

    @routes.post("/login", include_in_schema=False, dependencies=[Depends(check_csrf)])
    async def login(request: Request, user: str = Form(""), password: str = Form(""),
                    next: str = Form("/")) -> Response:
        """Check the name and password; on success a new session and on to ``next``."""
        state = _state(request)
        if state.user is not None:
            return RedirectResponse(safe_next(next), status_code=303)
        name = user.strip()[:MAX_NAME_CHARS]
        wait = attempt_wait((guard.by_client, client_host(request.scope)),
                            (guard.by_name, name.casefold()))
        if wait:
            return page(429, "Sign in", error=(
                f"Too many sign-in attempts: try again in {wait} seconds."),
                form=_form(request, next, name), headers={"Retry-After": str(wait)})
        found = await run_in_threadpool(guard.authenticate, name,
                                        password[:MAX_PASSWORD_CHARS])
        if found is None:
            return page(401, "Sign in", error=WRONG, form=_form(request, next, name))
        entry = guard.settings.users[found.name]
        if passwords.needs_rehash(entry.password_hash, using=guard.hasher):
            log.warning("dashboard user %s: the password hash has older parameters; make a "
                        "new one with `campaign dashboard-user hash`", found.name)
        guard.sessions.end(state.token)
        token, _session = guard.sessions.create(found.name)
        response = RedirectResponse(safe_next(next), status_code=303)
        response.headers.append("set-cookie", guard.cookie(token, request.scope))
        return response

    @routes.post("/logout", include_in_schema=False, dependencies=[Depends(check_csrf)])
    def logout(request: Request) -> Response:
        """End the session and forget its cookie."""
        state = _state(request)
        guard.sessions.end(state.token)
        state.new_token = None
        response = RedirectResponse("/" if guard.open_access else "/login", status_code=303)
        response.headers.append("set-cookie", guard.cookie("", request.scope, clear=True))
        return response

    return routes
