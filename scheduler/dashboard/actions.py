"""The dashboard's actions: POST routes for operators, each with its session's CSRF token.

- ``POST /runs/{id}/pause``, ``/resume``, ``/cancel``;
- ``GET /runs/{id}/resend?rows=failed|unproven``: a confirmation page that says how many
  rows would be sent again; ``POST /runs/{id}/resend`` does it.

Each action leads back to the run's page (303), which says what was done. A finished run's
pause, resume or cancel is refused with a 409 page, as ``campaign pause`` refuses it.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Form, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from scheduler.dashboard import auth, steering
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.web import Notice, RunId, dashboard_of, render

Rows = Literal["failed", "unproven"]

#: What each kind of row is called on the confirmation page.
ROWS_SAID = {
    "failed": ("failed deliver", "The service refused them, or they failed for good after "
               "their retries. Each is sent again with its later steps."),
    "unproven": ("unproven deliver", "Sends in doubt that the service did not take: no "
                 "event came for them although a receiver listened without a break from "
                 "their send through all of the service's retries, so sending them again "
                 "reaches nobody twice. Sends the product cannot show untaken (a process "
                 "was killed meanwhile) are not among them."),
}


def _back(request: Request, run_id: int, notice: Notice) -> RedirectResponse:
    dash = dashboard_of(request)
    dash.shared.forget(f"/runs/{run_id}/live")  # the next update shows what was done
    key = dash.keep(notice)
    return RedirectResponse(f"/runs/{run_id}?notice={key}", status_code=303)


def router() -> APIRouter:
    """The actions' routes: an operator, and the form's CSRF token."""
    acts = APIRouter(dependencies=[Depends(auth.require_operator)])
    posted = [Depends(auth.check_csrf)]

    @acts.post("/runs/{run_id}/pause", dependencies=posted)
    async def pause(request: Request, run_id: RunId) -> Response:
        dash = dashboard_of(request)
        notice = await run_in_threadpool(steering.control, dash, run_id, "pause")
        return _back(request, run_id, notice)

    @acts.post("/runs/{run_id}/cancel", dependencies=posted)
    async def cancel(request: Request, run_id: RunId) -> Response:
        dash = dashboard_of(request)
        notice = await run_in_threadpool(steering.control, dash, run_id, "cancel")
        return _back(request, run_id, notice)

    @acts.post("/runs/{run_id}/resume", dependencies=posted)
    async def resume(request: Request, run_id: RunId) -> Response:
        dash = dashboard_of(request)
        notice = await run_in_threadpool(steering.resume, dash, run_id)
        return _back(request, run_id, notice)

    @acts.get("/runs/{run_id}/resend", response_class=HTMLResponse)
    async def confirm_resend(request: Request, run_id: RunId, rows: Rows) -> Response:
        dash = dashboard_of(request)
        run = await run_in_threadpool(dash.ledger.get_run, run_id)
        n, _ids = await run_in_threadpool(steering.resend_count, dash, run_id, rows)
        if not n:
            raise PageError(409, f"Run {run_id} has no {ROWS_SAID[rows][0]}ies to send "
                                 "again.", back=f"/runs/{run_id}")
        stem, meaning = ROWS_SAID[rows]
        name = stem + ("y" if n == 1 else "ies")
        return render(request, "confirm.html", {"run": run, "rows": rows, "n": n,
                                                "name": name, "meaning": meaning})

    @acts.post("/runs/{run_id}/resend", dependencies=posted)
    async def resend(request: Request, run_id: RunId, rows: Rows = Form(...)) -> Response:
        dash = dashboard_of(request)
        notice = await run_in_threadpool(steering.resend, dash, run_id, rows)
        return _back(request, run_id, notice)

    return acts
