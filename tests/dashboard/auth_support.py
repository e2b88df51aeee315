"""What the dashboard's auth tests build: logins with real argon2id hashes, a tiny app with
auth installed (one page, one action), clients that sign in through the real form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
from argon2 import PasswordHasher
from fastapi import Depends, FastAPI, Request

from scheduler.core.httpserver import BackgroundServer
from scheduler.core.timeutil import Clock
from scheduler.dashboard import auth
from scheduler.dashboard.auth import Guard
from scheduler.dashboard.users import User
from scheduler.settings.dashboard import DashboardSettings, DashboardUser

#: Passwords of the test logins.
PASSWORDS = {"ana": "ana-operator-pw", "vic": "vic-viewer-pw"}


class CountingHasher(PasswordHasher):
    """argon2-cffi's hasher, counting its verifications (to show equal work per attempt)."""

    def __init__(self) -> None:
        super().__init__()
        self.verified = 0

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:  # type: ignore[override]
        self.verified += 1
        return super().verify(hash, password)


_HASHES: dict[str, str] = {}


def user_settings(**extra: str) -> DashboardSettings:
    """``[dashboard]`` with ana (operator) and vic (viewer), hashed once per test session."""
    for name, password in PASSWORDS.items():
        if name not in _HASHES:
            _HASHES[name] = PasswordHasher().hash(password)
    users = {"ana": DashboardUser(role="operator", password_hash=_HASHES["ana"]),
             "vic": DashboardUser(role="viewer", password_hash=_HASHES["vic"])}
    return DashboardSettings(users=users, **extra)  # type: ignore[arg-type]


@dataclass
class TinyApp:
    """A FastAPI app with auth installed, a page (``GET /``) and an action (``POST /act``)
    that counts what it did."""

    app: FastAPI
    guard: Guard
    acted: list[str] = field(default_factory=list)


def tiny_app(settings: DashboardSettings, clock: Clock,
             hasher: PasswordHasher | None = None) -> TinyApp:
    """The app of :class:`TinyApp` on ``settings`` and ``clock``."""
    app = FastAPI()
    guard = auth.install(app, settings, clock=clock, hasher=hasher)
    tiny = TinyApp(app=app, guard=guard)

    @app.get("/")
    def home(request: Request, user: User = Depends(auth.require_viewer)) -> dict:
        return {"user": user.name, "role": user.role, "can_act": user.can_act,
                "open_access": user.open_access, "csrf": auth.csrf_token(request),
                "optional": getattr(auth.optional_user(request), "name", None)}

    @app.post("/act", dependencies=[Depends(auth.check_csrf)])
    def act(user: User = Depends(auth.require_operator)) -> dict:
        tiny.acted.append(user.name)
        return {"done": True}

    return tiny


@contextmanager
def serving(app: FastAPI) -> Iterator[BackgroundServer]:
    """``app`` on a real loopback port."""
    with BackgroundServer(app) as server:
        yield server


def client(server: BackgroundServer, source: str = "127.0.0.1") -> httpx.Client:
    """A client of ``server`` connecting from the loopback address ``source``."""
    return httpx.Client(base_url=server.base_url, follow_redirects=False,
                        transport=httpx.HTTPTransport(local_address=source))


def form_token(html: str) -> str:
    """The hidden ``csrf_token`` of a page's form."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no csrf_token field on the page"
    return found.group(1)


def attempt(http: httpx.Client, name: str, password: str, next_page: str = "/") -> httpx.Response:
    """Open the login form and send it (as a browser does)."""
    token = form_token(http.get("/login").text)
    return http.post("/login", data={"user": name, "password": password,
                                     "csrf_token": token, "next": next_page})


def attempt_from(proxy: httpx.Client, address: str, name: str) -> httpx.Response:
    """A wrong login attempt passed on by a proxy (on this machine) for ``address``."""
    forwarded = {"X-Forwarded-For": address}
    token = form_token(proxy.get("/login", headers=forwarded).text)
    return proxy.post("/login", headers=forwarded,
                      data={"user": name, "password": "wrong-pw-x", "csrf_token": token})


@contextmanager
def signed_in(server: BackgroundServer, name: str,
              source: str = "127.0.0.1") -> Iterator[httpx.Client]:
    """A client signed in as ``name`` through the form (closed on exit)."""
    with client(server, source) as http:
        response = attempt(http, name, PASSWORDS[name])
        assert response.status_code == 303, response.text
        yield http
