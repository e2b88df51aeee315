"""CSRF: every POST (and any other unsafe method) carries its session's token, or gets 403.

The token is per session (:mod:`scheduler.dashboard.sessions`), put in every form as the
hidden field ``csrf_token`` (``{{ csrf_token(request) }}`` in a template) or sent by script
as the ``X-CSRF-Token`` header; it is compared in constant time. The auth middleware checks
it before any route runs (so a POST route cannot forget), and :func:`check_csrf`, the
dependency every POST route declares, checks again where no middleware ran.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from fastapi import HTTPException, Request
from fastapi.routing import APIRoute
from starlette.types import Message, Receive

#: The hidden form field and the header that carry the token.
FIELD = "csrf_token"
HEADER = "x-csrf-token"
#: Methods that change nothing (no token needed).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: The largest form body read to find the token (an action's form is far smaller).
MAX_FORM_BYTES = 64 * 1024
#: What a refused request is told (a forged or stale form).
REFUSED = ("This form has expired or did not come from this dashboard (its security token "
           "is missing or wrong). Go back, reload the page and try again.")
#: The key of ``request.state`` where the middleware leaves what it found.
STATE_KEY = "dashboard_auth"


def tokens_match(expected: str, given: str | None) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time (``None``/empty: no)."""
    if not given or not expected:
        return False
    return hmac.compare_digest(expected.encode("utf-8", "replace"),
                               given.encode("utf-8", "replace"))


def csrf_token(request: Request) -> str:
    """The token of this request's session, for a form's hidden ``csrf_token`` field."""
    state = getattr(request.state, STATE_KEY, None)
    if state is None:
        raise RuntimeError("the dashboard's auth middleware is not installed "
                           "(scheduler.dashboard.auth.install)")
    token: str = state.session.csrf
    return token


def form_token(body: bytes, content_type: str) -> str | None:
    """The ``csrf_token`` field of a URL-encoded form body (``None``: none, or not a form)."""
    if content_type.split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return None
    values = parse_qs(body.decode("latin-1"), max_num_fields=100).get(FIELD)
    return values[0] if values else None


async def read_body(receive: Receive, limit: int = MAX_FORM_BYTES) -> bytes | None:
    """The whole request body (``None`` when it is larger than ``limit``)."""
    chunks: list[bytes] = []
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        more = bool(message.get("more_body", False))
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Callable[[], Awaitable[Message]]:
    """A ``receive`` that hands ``body`` once, then waits on the real one (disconnects)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def check_csrf(request: Request) -> None:
    """FastAPI dependency of every POST route: 403 unless the request carries its session's
    token (the middleware has usually checked it already)."""
    state = getattr(request.state, STATE_KEY, None)
    if state is not None and state.csrf_checked:
        return
    expected = csrf_token(request)
    given = request.headers.get(HEADER)
    if given is None:
        form = await request.form()
        value = form.get(FIELD)
        given = value if isinstance(value, str) else None
    if not tokens_match(expected, given):
        raise HTTPException(status_code=403, detail=REFUSED)


def _depends_on(dependant: Any, target: object) -> bool:
    return any(dep.call is target or _depends_on(dep, target)
               for dep in dependant.dependencies)


def api_routes(app: Any) -> list[tuple[str, set[str], Any]]:
    """``(path, methods, dependant)`` of every API route of ``app``, those of included
    routers too, with the dependencies their routers add. FastAPI >= 0.16x keeps an
    included router whole (``app.routes`` lists it as one entry):
    ``iter_route_contexts`` walks into it; before, ``app.routes`` held every route."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # an older FastAPI: included routes are copied into app.routes
        return [(r.path, r.methods or set(), r.dependant) for r in app.routes
                if isinstance(r, APIRoute)]
    return [(str(ctx.path), set(ctx.methods or ()), ctx.dependant)
            for ctx in iter_route_contexts(app.routes)
            if isinstance(ctx.original_route, APIRoute)]


def unguarded_posts(app: Any, needing: object = check_csrf) -> list[str]:
    """The paths of routes taking an unsafe method without ``needing`` (by default
    :func:`check_csrf`) among their dependencies, however deep; tests assert it is empty
    for the dashboard."""
    return sorted(path for path, methods, dependant in api_routes(app)
                  if methods - SAFE_METHODS and not _depends_on(dependant, needing))
