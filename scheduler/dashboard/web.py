"""What every route of the dashboard shares: its state (:class:`Dashboard`), the Jinja2
templates (autoescaped: every value from outside is shown as text) and :func:`render`.

Times are shown in the campaign's zone with its label
(:func:`scheduler.core.time_words.local_time`), numbers with thousands separators,
durations in words.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Path as PathParam
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from scheduler.core.time_words import local_time, span
from scheduler.core.timeutil import Clock, utcnow
from scheduler.dashboard.shared import SharedReads

if TYPE_CHECKING:
    from scheduler.dashboard.campaign_files import CampaignFiles
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings

PACKAGE = Path(__file__).resolve().parent
TEMPLATES = PACKAGE / "templates"
STATIC = PACKAGE / "static"

#: The pages of the navigation bar: (path, label).
NAV = (("/", "Overview"), ("/senders", "Senders"), ("/campaigns", "Campaigns"),
       ("/replies", "Replies"), ("/recipients", "Recipients"), ("/webhooks", "Webhooks"))
#: The pages only an operator may open, after those (a viewer is not shown them).
OPERATOR_NAV = (("/privacy", "Privacy"),)
#: A run's id in a path: a positive number the database can hold (else the page's 404).
RunId = Annotated[int, PathParam(ge=1, le=2**63 - 1)]
#: The most notices kept for the pages actions lead back to.
NOTICES_KEPT = 200


@dataclass(frozen=True)
class Notice:
    """What an action did, said on the page it leads back to."""

    text: str
    #: ``done``, or ``warn`` when it worked but needs something more (resume after resend).
    kind: str = "done"


@dataclass
class Dashboard:
    """The dashboard's state, shared by its routes (``app.state.dashboard``)."""

    settings: Settings
    ledger: Ledger
    campaigns: CampaignFiles
    clock: Clock = utcnow
    #: How often a live page's view is read again (seconds).
    live_every_s: float = 1.0
    #: Comment lines sent on a quiet live connection, so proxies keep it open (seconds).
    keepalive_s: float = 15.0
    templates: Jinja2Templates = field(init=False)
    notices: OrderedDict[str, Notice] = field(default_factory=OrderedDict, init=False)
    #: The live streams' newest views, shared by every browser watching the same page.
    shared: SharedReads = field(default_factory=SharedReads, init=False)

    def __post_init__(self) -> None:
        self.templates = make_templates()

    def keep(self, notice: Notice) -> str:
        """Keep ``notice`` for the next page (a redirect names it by a random key)."""
        key = secrets.token_urlsafe(9)
        self.notices[key] = notice
        while len(self.notices) > NOTICES_KEPT:
            self.notices.popitem(last=False)
        return key

    def notice(self, key: str | None) -> Notice | None:
        """The notice kept under ``key`` (``?notice=KEY``), if still kept."""
        return self.notices.get(key) if key else None


def dashboard_of(request: Request) -> Dashboard:
    """The :class:`Dashboard` of the app serving ``request``."""
    dash: Dashboard = request.app.state.dashboard
    return dash


# ---------------------------------------------------------------------- template filters


def number(value: int | float | None) -> str:
    """``12,345`` (``–`` for None); a float with one decimal."""
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def percent(value: float | None, digits: int = 1) -> str:
    """``87.5 %`` of a share (0–1) or ``–``."""
    return "–" if value is None else f"{value * 100:.{digits}f} %"


def when(moment: datetime | str | None, zone: str, seconds: bool = False) -> str:
    """A moment (or its ISO 8601 text) in ``zone`` with the zone's label
    (``2026-11-23 09:02 -03:00``)."""
    if isinstance(moment, str):
        try:
            parsed: datetime | None = datetime.fromisoformat(moment)
        except ValueError:
            return moment
    else:
        parsed = moment
    return local_time(parsed, zone, seconds=seconds, empty="–")


def duration(value: float | timedelta | None) -> str:
    """A duration in words (``4 min``)."""
    return "–" if value is None else span(value)


def ago(moment: datetime | None, now: datetime) -> str:
    """How long before ``now`` (``12 s ago``), ``never`` for None."""
    if moment is None:
        return "never"
    return f"{span(now - moment)} ago"


def make_templates() -> Jinja2Templates:
    """The dashboard's templates: autoescaped, an undefined name is an error (never blank)."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(number=number, percent=percent, when=when, duration=duration)
    env.globals.update(ago=ago, nav=NAV, operator_nav=OPERATOR_NAV)
    return Jinja2Templates(env=env)


# ---------------------------------------------------------------------- rendering


def visitor(request: Request) -> Any:
    """The visitor (auth's ``User``), or ``None`` (nobody signed in, or a request refused
    before the auth middleware ran): the pages show buttons only to an operator."""
    from scheduler.dashboard import auth

    return auth.optional_user(request)


def form_token(request: Request) -> str:
    """The CSRF token of the visitor's session for a form ('' where there is none)."""
    from scheduler.dashboard.csrf import csrf_token

    try:
        return csrf_token(request)
    except RuntimeError:  # no session: the page shows no form
        return ""


def render(request: Request, name: str, context: dict[str, Any] | None = None, *,
           status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    """Template ``name`` with ``context``, the visitor, its form token and the time now."""
    dash = dashboard_of(request)
    values = {"user": visitor(request), "csrf": form_token(request), "now": dash.clock(),
              "notice": None,
              "path": request.url.path, **(context or {})}
    response: HTMLResponse = dash.templates.TemplateResponse(
        request, name, values, status_code=status, headers=headers)
    return response


def fragment(request: Request, name: str, context: dict[str, Any]) -> str:
    """Template ``name`` as a string (the live section a page swaps in)."""
    dash = dashboard_of(request)
    template = dash.templates.env.get_template(name)
    return template.render({"request": request, "user": visitor(request),
                            "csrf": form_token(request), "now": dash.clock(),
                            "path": request.url.path, **context})
