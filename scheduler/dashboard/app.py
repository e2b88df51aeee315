"""``create_app``: the dashboard as an ASGI app (FastAPI), over a ledger and the settings.

Routes: the pages (:mod:`.pages`), their live streams (:mod:`.live`), the actions
(:mod:`.actions`), the reports to download (:mod:`.downloads`), the replies' inbox
(:mod:`.inbox`), one recipient's story (:mod:`.recipients`), the outgoing webhooks
(:mod:`.webhooks`), /login and /logout
(:mod:`.auth`), and ``/static/`` (our CSS and JavaScript, from the package). Middleware,
outermost first: :class:`.headers.Headers` (timing, security headers, a bug's 500 page),
``GET /metrics`` (:mod:`scheduler.metrics.endpoint`: loopback, or a bearer token; no
login), then auth's (sessions, logins, CSRF). Errors a visitor can cause are pages (:mod:`.errors`).

``campaign dashboard`` serves it alone; ``campaign serve`` serves it too, on its own port,
when ``[dashboard] serve = true``. The webhook receiver's app never includes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from scheduler.core.timeutil import Clock, utcnow
from scheduler.dashboard import (
    actions,
    auth,
    downloads,
    inbox,
    live,
    pages,
    privacy,
    recipients,
    webhooks,
)
from scheduler.dashboard.campaign_files import CampaignFiles, Check
from scheduler.dashboard.errors import install_handlers
from scheduler.dashboard.headers import Headers
from scheduler.dashboard.web import STATIC, Dashboard
from scheduler.metrics.endpoint import MetricsRoute

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings


def create_app(settings: Settings, ledger: Ledger, *, check: Check | None = None,
               clock: Clock = utcnow, live_every_s: float = 1.0,
               secure_cookies: bool = False) -> FastAPI:
    """The dashboard over ``ledger``: ``check`` validates and plans a campaign file for the
    campaigns page (``campaign plan``'s; None: the page lists the files unchecked),
    ``live_every_s`` is how often a live page reads its view again, ``secure_cookies``
    marks the session cookie Secure (served over https by a proxy)."""
    app = FastAPI(title="campaign dashboard", docs_url=None, redoc_url=None,
                  openapi_url=None)
    folder = (settings.project_dir or Path.cwd()) / "campaigns"
    app.state.dashboard = Dashboard(settings, ledger, CampaignFiles(folder, check),
                                    clock=clock, live_every_s=live_every_s)
    install_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for module in (pages, live, actions, downloads, inbox, recipients, webhooks, privacy):
        app.include_router(module.router())
    auth.install(app, settings.dashboard, clock=clock, secure_cookies=secure_cookies)
    # GET /metrics before the login rules: a scraper holds no session (its own rule)
    app.add_middleware(MetricsRoute, ledger=ledger, settings=settings, clock=clock)
    app.add_middleware(Headers)  # added last: the outermost
    return app
