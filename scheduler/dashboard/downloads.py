"""The run's reports to download: ``/runs/{id}/report.xlsx`` (the workbook ``campaign
report`` writes, charts included) and ``/runs/{id}/report.csv`` (its Recipients table).

Each is written by :func:`scheduler.reports.api.write_report` (one snapshot of the ledger)
into a temporary folder, sent, and deleted once sent.
"""

from __future__ import annotations

import shutil

from fastapi import APIRouter, Depends, Request
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse

from scheduler.dashboard import auth
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.web import RunId, dashboard_of
from scheduler.reports.output import MEDIA


def router() -> APIRouter:
    """The downloads' routes (a viewer at least)."""
    files = APIRouter(dependencies=[Depends(auth.require_viewer)])

    @files.get("/runs/{run_id}/report.{fmt}")
    async def report(request: Request, run_id: RunId, fmt: str) -> FileResponse:
        if fmt not in MEDIA:
            raise PageError(404, f"There is no {fmt!r} report: download report.xlsx or "
                                 "report.csv.", back=f"/runs/{run_id}")
        from scheduler.reports.api import download

        dash = dashboard_of(request)
        path, folder = await run_in_threadpool(download, dash.ledger, dash.settings, run_id,
                                               fmt, "dashboard")
        return FileResponse(path, media_type=MEDIA[fmt], filename=path.name,
                            background=BackgroundTask(shutil.rmtree, folder,
                                                      ignore_errors=True))

    return files
