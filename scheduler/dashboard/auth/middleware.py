"""The auth middleware: every request's session and user resolved, and what the rules refuse
refused before any route runs (a pure ASGI middleware, so live streams pass untouched)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scheduler.dashboard import csrf
from scheduler.dashboard.auth.guard import (
    AuthState,
    Guard,
    client_host,
    host_header,
    is_loopback,
    session_token,
)
from scheduler.dashboard.auth.pages import come_again, refuse, to_login

#: Paths anyone may reach without a login: the login form, and the static files (the
#: style sheet it uses) under a prefix.
PUBLIC_PATHS = frozenset({"/login", "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)
#: Why an open dashboard refuses a request from elsewhere.
LOOPBACK_ONLY = ("This dashboard has no logins configured, so it answers only on this "
                 "machine's loopback address (http://127.0.0.1:PORT/). To reach it from "
                 "elsewhere or through a proxy, add users under [dashboard.users] in "
                 "config.toml.")


def is_public(path: str) -> bool:
    """Whether ``path`` needs no login."""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


class AuthMiddleware:
    """Refuses, in this order: an open dashboard reached other than by loopback (403); a
    private page without a login (GET: to the login form; others: 403); an unsafe method
    without its session's CSRF token (403). Everything else goes on with
    ``request.state.dashboard_auth`` set.

    A link followed from another site with no session gets a page that opens the same
    address again from here: the browser then sends its SameSite=Strict cookie (answering
    at once would replace a signed-in session by a new anonymous one)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        guard = self.guard
        if guard.open_access and not (is_loopback(client_host(scope))
                                      and is_loopback(host_header(scope))):
            await refuse(403, "Not on this address", LOOPBACK_ONLY)(scope, receive, send)
            return
        token = session_token(scope)
        session = guard.sessions.get(token)
        new_token = None
        if (session is None or token is None) and from_another_site(scope):
            await come_again(scope)(scope, receive, send)
            return
        if session is None or token is None:
            token, session = guard.sessions.create()
            new_token = token
        state = AuthState(session=session, token=token, user=guard.user_of(session),
                          new_token=new_token)
        scope.setdefault("state", {})[csrf.STATE_KEY] = state
        send = _with_cookie(send, guard, state, scope)
        path = scope.get("path", "/")
        unsafe = scope["method"] not in csrf.SAFE_METHODS
        if state.user is None and not is_public(path):
            if not unsafe:
                await to_login(path, scope.get("query_string", b""))(scope, receive, send)
            else:
                await refuse(403, "Signed out", "Your session has ended: sign in again, "
                             "then repeat what you were doing.")(scope, receive, send)
            return
        if unsafe:
            receive = await _check_token(scope, receive, state)
            if not state.csrf_checked:
                await refuse(403, "Refused", csrf.REFUSED)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def from_another_site(scope: Scope) -> bool:
    """Whether the browser followed a link from another site to a page of ours: it then
    withholds the SameSite=Strict cookie, so a missing session proves nothing yet."""
    headers = Headers(scope=scope)
    return (scope["method"] in ("GET", "HEAD")
            and headers.get("sec-fetch-site") == "cross-site"
            and headers.get("sec-fetch-mode") == "navigate")


async def _check_token(scope: Scope, receive: Receive, state: AuthState) -> Receive:
    """Look for the CSRF token (the header, else the form's field) and note whether it is
    the session's; the ``receive`` to pass on (the body replayed when it was read)."""
    headers = Headers(scope=scope)
    given = headers.get(csrf.HEADER)
    if given is None:
        body = await csrf.read_body(receive)
        if body is None:
            return receive
        given = csrf.form_token(body, headers.get("content-type", ""))
        receive = csrf.replay(body, receive)
    state.csrf_checked = csrf.tokens_match(state.session.csrf, given)
    return receive


def _with_cookie(send: Send, guard: Guard, state: AuthState, scope: Scope) -> Send:
    """``send`` adding the new session's cookie to the response, when one was made."""
    if state.new_token is None:
        return send

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and state.new_token is not None:
            headers = [*message.get("headers", []),
                       (b"set-cookie", guard.cookie(state.new_token, scope).encode("latin-1"))]
            message = {**message, "headers": headers}
        await send(message)

    return sending
