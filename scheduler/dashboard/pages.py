"""The dashboard's pages (GET): the overview, a run, the senders, the campaign files, and
the live sections of the overview and of a run as HTML fragments.

Each page reads its view in one snapshot (:mod:`scheduler.views`); a run's sends-per-hour
chart is a second, small read (the per-minute sends the database keeps per run). The live
section of a page is the same template the live stream sends (:mod:`.live`), so a page
without JavaScript shows everything a live one does (and a link to refresh it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse, Response

from scheduler.core.time_words import zone_label
from scheduler.core.units import load_zone
from scheduler.dashboard.auth import require_viewer
from scheduler.dashboard.svg import bars_svg, funnel_svg, hourly_svg, hours_of
from scheduler.dashboard.web import Dashboard, RunId, dashboard_of, fragment, render
from scheduler.ledger import access
from scheduler.ledger.funnel import stages
from scheduler.ledger.report_reads import ReportReads
from scheduler.ledger.states import FINISHED_RUN_STATUSES, RunStatus
from scheduler.views.attempts import attempt_table
from scheduler.views.experiment_status import experiment_lines, experiment_of_run
from scheduler.views.overview import Overview, read_overview
from scheduler.views.run_view import RunView, read_run_view

# ---------------------------------------------------------------------- the run's view


def _hours(dash: Dashboard, run_id: int, zone: str) -> list[tuple[Any, int]]:
    """Sends per local hour, from the sends per minute the database keeps per run."""
    with access.read(dash.ledger.engine, f"read the sends per minute of run {run_id}") as conn:
        frame = ReportReads(conn).send_minutes(run_id)
    minutes = [(_moment(at), int(n)) for at, n in zip(frame["at"], frame["n"], strict=True)]
    return hours_of(minutes, zone)


def _moment(value: Any) -> datetime:
    """A minute as the database gives it: text ``YYYY-MM-DD HH:MM`` (SQLite, UTC) or a
    time (PostgreSQL, pandas)."""
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    if hasattr(value, "to_pydatetime"):
        moment: datetime = value.to_pydatetime()
        return moment
    assert isinstance(value, datetime)
    return value


def actions_of(view: RunView) -> dict[str, Any]:
    """Which buttons a run's page offers: pause, resume, cancel, send again (and how many)."""
    status = view.run.status
    finished = status in FINISHED_RUN_STATUSES
    unserved = any(w.kind == "unserved" for w in view.waits)
    return {
        "pause": status in (RunStatus.RUNNING, RunStatus.PLANNED),
        "resume": status == RunStatus.PAUSED or (
            status in (RunStatus.RUNNING, RunStatus.PLANNED) and unserved),
        "cancel": not finished,
        # rows are queued again on a run not being sent (the ledger refuses it otherwise)
        "failed": 0 if status == RunStatus.RUNNING else view.counts.get("failed", 0),
        "unproven": 0 if status == RunStatus.RUNNING else view.unknown_detail.get(
            "unproven", 0),
        "finished": finished,
    }


def read_run(dash: Dashboard, run_id: int) -> RunView:
    """The run's view, read now."""
    return read_run_view(dash.ledger, run_id, settings=dash.settings, now=dash.clock())


def run_context(dash: Dashboard, run_id: int, view: RunView | None = None) -> dict[str, Any]:
    """Everything the run's page and its live section show (``view``: read already)."""
    view = view if view is not None else read_run(dash, run_id)
    zone = view.run.timezone
    channel = view.funnel.channel
    funnel = [(stage.label, stage.key, int(view.funnel.counts.get(stage.key, 0)))
              for stage in stages(channel)]
    hours = _hours(dash, run_id, zone)
    label = zone_label(dash.clock().astimezone(load_zone(zone)))
    charts = {"funnel": funnel_svg([(label, n) for label, _key, n in funnel], channel,
                                   title=f"run {run_id}: funnel"),
              "hourly": hourly_svg(hours, label, title=f"run {run_id}: sends per hour")}
    if view.funnel.sms is not None and view.funnel.sms.by_error_code:
        charts["sms"] = bars_svg(sorted(view.funnel.sms.by_error_code.items(),
                                        key=lambda kv: -kv[1]),
                                 title="undelivered SMS by error code")
    calls = view.funnel.calls
    if calls is not None:  # voice and WhatsApp calls: the report's outcomes chart
        charts["calls"] = bars_svg([("answered", calls.answered),
                                    ("not answered", calls.not_answered),
                                    ("no outcome yet", calls.no_outcome_yet)],
                                   title="calls by outcome")
    # A/B variants and their test, as `campaign status` says them (no line: no variants)
    experiment = experiment_lines(experiment_of_run(dash.ledger.engine, run_id), zone, 200)
    return {"view": view, "run": view.run, "zone": zone, "funnel": funnel, "charts": charts,
            "experiment": experiment, "attempts": attempt_table(view.attempts),
            "actions": actions_of(view), "live_url": f"/runs/{run_id}/live",
            "fragment_url": f"/runs/{run_id}/fragment"}


def read_front(dash: Dashboard) -> Overview:
    """The overview's view, read now."""
    return read_overview(dash.ledger, settings=dash.settings, now=dash.clock())


def overview_context(dash: Dashboard, view: Overview | None = None) -> dict[str, Any]:
    """Everything the overview and its live section show (``view``: read already)."""
    view = view if view is not None else read_front(dash)
    return {"ov": view, "live_url": "/live", "fragment_url": "/fragment"}


def router() -> APIRouter:
    """The pages' routes (every one needs a viewer at least)."""
    pages = APIRouter(dependencies=[Depends(require_viewer)])

    @pages.get("/", response_class=HTMLResponse)
    def overview(request: Request) -> Response:
        dash = dashboard_of(request)
        notice = dash.notice(request.query_params.get("notice"))
        return render(request, "overview.html", {**overview_context(dash), "notice": notice})

    @pages.get("/fragment", response_class=HTMLResponse)
    def overview_fragment(request: Request) -> Response:
        html = fragment(request, "_overview_live.html", overview_context(dashboard_of(request)))
        return HTMLResponse(html)

    @pages.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: RunId) -> Response:
        context = run_context(dashboard_of(request), run_id)
        notice = dashboard_of(request).notice(request.query_params.get("notice"))
        return render(request, "run.html", {**context, "notice": notice})

    @pages.get("/runs/{run_id}/fragment", response_class=HTMLResponse)
    def run_fragment(request: Request, run_id: RunId) -> Response:
        html = fragment(request, "_run_live.html", run_context(dashboard_of(request), run_id))
        return HTMLResponse(html)

    @pages.get("/senders", response_class=HTMLResponse)
    def senders(request: Request) -> Response:
        # the overview's reading (one snapshot; today's sends index-only, as the overview
        # counts them): `campaign senders` adds each session's plan limits
        return render(request, "senders.html", {"ov": read_front(dashboard_of(request))})

    @pages.get("/campaigns", response_class=HTMLResponse)
    def campaigns(request: Request, again: bool = False) -> Response:
        dash = dashboard_of(request)
        files = dash.campaigns.read(again=again)
        return render(request, "campaigns.html",
                      {"files": files, "folder": dash.campaigns.folder})

    return pages
