"""``/api/v1/runs/{run_id}/events`` and ``report.xlsx``/``report.csv`` (a viewer's token),
``/api/v1/runs/{run_id}/resend`` (an operator's): a run's newest events and replies, its
report, and its failed or unknown rows queued again, as ``campaign status --json``'s
``view.events``, ``campaign report`` and ``campaign resend`` have them.

A report is written by :func:`scheduler.reports.api.write_report` (one snapshot of the
ledger, as the dashboard's downloads) into a temporary folder, sent, and deleted once sent.
"""

from __future__ import annotations

import shutil
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, Response
from starlette.background import BackgroundTask

from scheduler.api import reads
from scheduler.api.auth import caller, operator
from scheduler.api.schemas import Problem, RecentEvents, ResendIn, ResendResult
from scheduler.ledger.api_tokens import TokenInfo
from scheduler.reports.output import MEDIA

Viewer = Annotated[TokenInfo, Depends(caller)]
Operator = Annotated[TokenInfo, Depends(operator)]
RunId = Annotated[int, PathParam(ge=1, le=2_147_483_647, description="The run's id.")]


def add_run_routes(app: FastAPI, prefix: str, errors: dict[int | str, dict[str, Any]],
                   action_errors: dict[int | str, dict[str, Any]], answer: Any) -> None:
    """Add the two routes to ``app``; ``answer(doc)`` makes a route's JSON response."""
    missing: dict[int | str, dict[str, Any]] = {
        404: {"model": Problem, "description": "No such run."}}

    @app.get(f"{prefix}/runs/{{run_id}}/events", response_model=RecentEvents, tags=["runs"],
             responses={**errors, **missing},
             summary="A run's newest webhook events and replies, newest first")
    def run_events(request: Request, run_id: RunId, token: Viewer) -> Response:
        return answer(reads.run_events(request.app.state.api.ledger(), run_id))

    @app.post(f"{prefix}/runs/{{run_id}}/resend", response_model=ResendResult, tags=["runs"],
              responses={**action_errors, **missing},
              summary="Queue a run's failed, unproven or unknown rows again "
                      "(as `campaign resend`)")
    def resend_run(request: Request, run_id: RunId, body: ResendIn,
                   token: Operator) -> Response:
        state = request.app.state.api
        ledger, settings = state.both()
        return answer(reads.resend(ledger, settings, run_id, body.states(), state.clock()))

    def report_route(fmt: str) -> Any:
        def report(request: Request, run_id: RunId, token: Viewer) -> FileResponse:
            from scheduler.reports.api import download

            ledger, settings = request.app.state.api.both()
            path, folder = download(ledger, settings, run_id, fmt, "api")
            return FileResponse(path, media_type=MEDIA[fmt], filename=path.name,
                                background=BackgroundTask(shutil.rmtree, folder,
                                                          ignore_errors=True))

        report.__name__ = f"run_report_{fmt}"
        return report

    for fmt, what in (("xlsx", "The run's workbook (as `campaign report`: charts included)"),
                      ("csv", "The run's Recipients table as CSV (as `campaign report "
                              "--format csv`)")):
        app.get(f"{prefix}/runs/{{run_id}}/report.{fmt}", response_class=FileResponse,
                tags=["runs"], summary=what,
                responses={**errors, **missing, 200: {"content": {MEDIA[fmt]: {}},
                                                      "description": what}})(
            report_route(fmt))
