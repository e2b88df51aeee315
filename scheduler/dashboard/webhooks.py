"""The outgoing webhooks page: ``GET /webhooks?state=`` (a viewer at least).

Each subscription of ``config.toml`` with its deliveries by state (pending, failing,
delivered, failed), then the latest deliveries (``state`` narrows them): the same reading
as ``campaign webhooks`` (:func:`scheduler.webhooks_out.readout.webhooks_view`). No
secret, and no URL's query, is ever on the page.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse, Response

from scheduler.dashboard.auth import require_viewer
from scheduler.dashboard.web import dashboard_of, render
from scheduler.webhooks_out.readout import STATES, webhooks_view

#: Deliveries listed on the page.
SHOWN = 50


def router() -> APIRouter:
    """The page's route."""
    pages = APIRouter(dependencies=[Depends(require_viewer)])

    @pages.get("/webhooks", response_class=HTMLResponse)
    def webhooks(request: Request, state: str = "") -> Response:
        dash = dashboard_of(request)
        chosen = state if state in STATES else ""
        view = webhooks_view(dash.ledger.engine, dash.settings.webhooks,
                             dash.settings.webhook_delivery, dash.clock(),
                             states=[chosen] if chosen else None, limit=SHOWN)
        return render(request, "webhooks.html", {"view": view, "states": STATES,
                                                 "chosen": chosen})

    return pages
