"""The run's reports to download: ``/runs/{id}/report.xlsx`` (the workbook ``campaign
report`` writes, charts included) and ``/runs/{id}/report.csv`` (its Recipients table).

Each is written by :func:`scheduler.reports.api.write_report` (one snapshot of the ledger)
into a temporary folder, sent, and deleted once sent.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse

from scheduler.dashboard import auth
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.web import Dashboard, RunId, dashboard_of

MEDIA = {"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
         "csv": "text/csv; charset=utf-8"}


def write(dash: Dashboard, run_id: int, fmt: str) -> tuple[Path, Path]:
    """The report written into a new temporary folder: (its file, the folder)."""
    from scheduler.reports.api import write_report

    dash.ledger.get_run(run_id)  # an unknown run: its 404 before any file is made
    folder = Path(tempfile.mkdtemp(prefix=f"campaign-dashboard-run-{run_id}-"))
    try:
        result = write_report(dash.ledger, [run_id], fmt=fmt, output=folder,
                              settings=dash.settings)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return result.path, folder


def router() -> APIRouter:
    """The downloads' routes (a viewer at least)."""
    files = APIRouter(dependencies=[Depends(auth.require_viewer)])

    @files.get("/runs/{run_id}/report.{fmt}")
    async def report(request: Request, run_id: RunId, fmt: str) -> FileResponse:
        if fmt not in MEDIA:
            raise PageError(404, f"There is no {fmt!r} report: download report.xlsx or "
                                 "report.csv.", back=f"/runs/{run_id}")
        path, folder = await run_in_threadpool(write, dashboard_of(request), run_id, fmt)
        return FileResponse(path, media_type=MEDIA[fmt], filename=path.name,
                            background=BackgroundTask(shutil.rmtree, folder,
                                                      ignore_errors=True))

    return files
