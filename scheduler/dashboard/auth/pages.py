"""The pages auth answers with itself: the login form, refusals, and the way to the login.

Rendered from ``templates/login.html`` with autoescaping on (a user name typed at the form
comes back as text). No page here holds a password, a hash, or a setting's secret.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import jinja2
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.types import Scope

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
#: Headers of every auth page: never cached, never framed. The dashboard's outermost
#: middleware (``scheduler.dashboard.headers``) adds its Content-Security-Policy and the
#: rest to these responses as to every other.
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
           "X-Content-Type-Options": "nosniff"}


def page(status: int, title: str, *, message: str | None = None, error: str | None = None,
         form: dict[str, str] | None = None,
         headers: dict[str, str] | None = None) -> HTMLResponse:
    """The login page's layout with a message, an error and (``form``) the login form:
    ``form`` holds ``csrf``, ``next`` and the ``name`` typed so far."""
    html = _ENV.get_template("login.html").render(
        title=title, message=message, error=error, form=form, refresh=None)
    return HTMLResponse(html, status_code=status, headers={**HEADERS, **(headers or {})})


def refuse(status: int, title: str, message: str) -> HTMLResponse:
    """A page refusing the request, saying why and what to do."""
    return page(status, title, error=message)


def safe_next(target: str | None) -> str:
    """``target`` if it is a path of this site (``/runs/3?x=1``), else ``/``: the login
    never sends a browser to another site."""
    if (not target or not target.startswith("/") or target.startswith("//")
            or "\\" in target or any(ord(c) < 32 for c in target)):
        return "/"
    return target


def login_url(path: str, query: bytes | str = b"") -> str:
    """/login with the page to come back to after signing in."""
    query = query.decode("latin-1") if isinstance(query, bytes) else query
    target = f"{path}?{query}" if query else path
    return f"/login?next={quote(safe_next(target), safe='')}"


def come_again(scope: Scope) -> HTMLResponse:
    """A page that opens its own address again at once (``<meta http-equiv="refresh">``,
    no script), as a navigation from this site; it sets no cookie."""
    query = scope.get("query_string", b"").decode("latin-1")
    target = safe_next(f"{scope.get('path', '/')}?{query}" if query else scope.get("path"))
    html = _ENV.get_template("login.html").render(
        title="Opening the dashboard", message="Opening the page…", form=None,
        error=None, refresh=target)
    return HTMLResponse(html, headers=HEADERS)


def to_login(path: str, query: bytes | str = b"") -> RedirectResponse:
    """303 to the login form, coming back to ``path`` afterwards."""
    return RedirectResponse(login_url(path, query), status_code=303,
                            headers={"Cache-Control": "no-store"})
