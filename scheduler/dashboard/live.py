"""Live updates: server-sent events (``text/event-stream``) of a page's live section.

``GET /live`` (the overview) and ``GET /runs/{id}/live`` read the page's view every second
(``Dashboard.live_every_s``); when its ``version`` changed since the last one sent, they
send the live section again, rendered by the same template as the page::

    id: <version>
    event: update
    data: <html line>
    data: <html line>
    : app;dur=3.1

``static/live.js`` swaps the section in. Streams of the same page share their reads
(:class:`~scheduler.dashboard.shared.SharedReads`): one read a second per page watched.
``retry:`` tells the browser to reconnect after 2 s; on a reconnect it sends
``Last-Event-ID`` (the version it shows), so nothing is sent again until something changed.
A quiet stream sends a comment every ``keepalive_s``. The stream ends when the session ends
(``event: signedout``) or the run disappears (``event: gone``); a ledger that cannot be
read now is said (``event: problem``) and read again next second.
The comment after each update is the server time it took (``Server-Timing``'s form).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from scheduler.core.errors import SchedulerError
from scheduler.core.timeutil import monotonic
from scheduler.dashboard import auth
from scheduler.dashboard.pages import overview_context, read_front, read_run, run_context
from scheduler.dashboard.web import Dashboard, RunId, dashboard_of, fragment
from scheduler.ledger.exceptions import RunNotFound

#: How long the browser waits before reconnecting (milliseconds).
RETRY_MS = 2000

#: ``read(dash) -> view`` and ``context(dash, view) -> the template's values``.
Reader = Callable[[Dashboard], Any]
Builder = Callable[[Dashboard, Any], dict[str, Any]]


def event(kind: str, data: str, *, event_id: str | None = None,
          comment: str | None = None) -> str:
    """One server-sent event: every line of ``data`` on a ``data:`` line of its own."""
    lines = [f"id: {event_id}"] if event_id is not None else []
    lines.append(f"event: {kind}")
    lines += [f"data: {line}" for line in (data.splitlines() or [""])]
    if comment:
        lines.append(f": {comment}")
    return "\n".join(lines) + "\n\n"


async def updates(request: Request, template: str, read: Reader,
                  build: Builder, *, key: str | None = None) -> AsyncIterator[str]:
    """The event stream of one live section (see the module's text); ``key`` names its
    shared reads (default: the path; the inbox's includes its filter)."""
    dash = dashboard_of(request)
    shown = request.headers.get("last-event-id")
    yield f"retry: {RETRY_MS}\n\n"
    quiet_since = monotonic()
    while True:
        if not auth.still_signed_in(request):
            yield event("signedout", "Your session has ended: reload the page to sign in.")
            return
        started = monotonic()
        try:
            view = await run_in_threadpool(dash.shared.read, key or request.url.path,
                                           dash.live_every_s * 0.9, lambda: read(dash))
            if view.version != shown:
                html = await run_in_threadpool(_render, request, template, build, view)
                shown = view.version
                yield event("update", html, event_id=shown,
                            comment=f"app;dur={(monotonic() - started) * 1000:.1f}")
                quiet_since = monotonic()
        except RunNotFound as exc:
            yield event("gone", str(exc))
            return
        except SchedulerError as exc:  # the ledger is busy or away: say so, try again
            yield event("problem", f"The ledger could not be read: {exc}")
        if monotonic() - quiet_since >= dash.keepalive_s:
            yield ": keepalive\n\n"
            quiet_since = monotonic()
        await asyncio.sleep(dash.live_every_s)


def _render(request: Request, template: str, build: Builder, view: Any) -> str:
    return fragment(request, template, build(dashboard_of(request), view))


def stream(source: AsyncIterator[str]) -> StreamingResponse:
    """A live section's events as a ``text/event-stream`` response."""
    return StreamingResponse(source, media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def router() -> APIRouter:
    """The live streams' routes (a viewer at least)."""
    live = APIRouter(dependencies=[Depends(auth.require_viewer)])

    @live.get("/live")
    async def overview_live(request: Request) -> StreamingResponse:
        return stream(updates(request, "_overview_live.html", read_front, overview_context))

    @live.get("/runs/{run_id}/live")
    async def run_live(request: Request, run_id: RunId) -> StreamingResponse:
        await run_in_threadpool(dashboard_of(request).ledger.get_run, run_id)  # 404 if none
        return stream(updates(request, "_run_live.html",
                              lambda dash: read_run(dash, run_id),
                              lambda dash, view: run_context(dash, run_id, view)))

    return live
