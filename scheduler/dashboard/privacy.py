"""The privacy page: an operator exports one person's data (a JSON download) or erases it,
as ``campaign person export`` / ``person forget`` do; the audit records the dashboard's user.

- ``GET /privacy``: the two forms (an operator only: a viewer gets 403);
- ``POST /privacy/export``: the JSON, as a download (the session's CSRF token);
- ``POST /privacy/forget``: erases (CSRF token, a reason, the box ticked), then leads back
  to the page (303), which says what was done.

The number is posted in the form, never put in a URL.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from scheduler.core.errors import SchedulerError
from scheduler.dashboard import auth
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.web import Notice, dashboard_of, render


def router() -> APIRouter:
    """The page and its two actions, for an operator."""
    privacy = APIRouter()
    page = [Depends(auth.require_operator)]
    operator = [Depends(auth.require_operator), Depends(auth.check_csrf)]

    @privacy.get("/privacy", response_class=HTMLResponse, dependencies=page)
    def privacy_page(request: Request) -> Response:
        dash = dashboard_of(request)
        return render(request, "privacy.html",
                      {"notice": dash.notice(request.query_params.get("notice"))})

    @privacy.post("/privacy/export", dependencies=operator)
    async def export(request: Request, number: str = Form(..., max_length=40),
                     reason: str = Form("", max_length=500)) -> Response:
        from scheduler.ledger.privacy_key import erasure_key
        from scheduler.privacy.person import export_person

        dash = dashboard_of(request)
        user = auth.current_user(request)
        try:
            found = await run_in_threadpool(
                lambda: export_person(dash.ledger.engine, number,
                                      key=erasure_key(dash.settings), who=user.name,
                                      via="dashboard", now=dash.clock(),
                                      reason=reason.strip() or None))
        except SchedulerError as exc:
            raise PageError(400, str(exc), back="/privacy") from None
        return Response(found.model_dump_json(indent=2), media_type="application/json",
                        headers={"Content-Disposition":
                                 f'attachment; filename="person-{found.number}.json"',
                                 "Cache-Control": "no-store"})

    @privacy.post("/privacy/forget", dependencies=operator)
    async def forget(request: Request, number: str = Form(..., max_length=40),
                     reason: str = Form("", max_length=500),
                     confirm: str = Form("")) -> Response:
        from scheduler.ledger.privacy_key import erasure_key
        from scheduler.privacy.person import forget_person

        dash = dashboard_of(request)
        user = auth.current_user(request)
        if not reason.strip():
            raise PageError(400, "Say why the person's data is erased.", back="/privacy")
        if confirm != "yes":
            raise PageError(400, "Tick the box: erasing cannot be undone.", back="/privacy")
        try:
            done = await run_in_threadpool(
                lambda: forget_person(dash.ledger.engine, number,
                                      key=erasure_key(dash.settings, create=True) or b"",
                                      who=user.name, via="dashboard", reason=reason,
                                      now=dash.clock()))
        except SchedulerError as exc:
            raise PageError(400, str(exc), back="/privacy") from None
        rows = sum(n for table, n in done.counts.items() if table != "deliveries skipped")
        key = dash.keep(Notice(f"Erased: {rows} rows now carry {done.pseudonym} "
                               f"({done.counts.get('deliveries skipped', 0)} waiting "
                               "deliveries skipped)."))
        return RedirectResponse(f"/privacy?notice={key}", status_code=303)

    return privacy
