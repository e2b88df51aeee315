"""The headers middleware: timing and security headers on every answer, and a bug's plain
500 page with no traceback (what the visitor sees when the dashboard itself is wrong)."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from scheduler.core.httpserver import BackgroundServer
from scheduler.dashboard.headers import Headers


def _broken(request: Request) -> PlainTextResponse:
    raise ValueError("a secret detail of the bug")


def _fine(request: Request) -> PlainTextResponse:
    return PlainTextResponse("fine", headers={"Content-Security-Policy": "default-src 'none'"})


def test_a_bug_is_a_plain_500_page_and_every_answer_has_its_headers() -> None:
    app = Starlette(routes=[Route("/broken", _broken), Route("/fine", _fine)],
                    middleware=[Middleware(Headers)])  # as create_app adds it
    with BackgroundServer(app) as server:
        broken = httpx.get(f"{server.base_url}/broken")
        fine = httpx.get(f"{server.base_url}/fine")
    assert broken.status_code == 500
    assert "Something went wrong" in broken.text and "secret detail" not in broken.text
    assert "Traceback" not in broken.text
    for answer in (broken, fine):
        assert answer.headers["server-timing"].startswith("app;dur=")
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["cache-control"] == "no-store"
    assert fine.headers["content-security-policy"] == "default-src 'none'"  # its own kept
    assert "frame-ancestors 'none'" in broken.headers["content-security-policy"]
