"""The inbox page: replies across runs, filtered by run, campaign, state and time, each
with its delivery, step, number and name; an operator marks one as handled.

- ``GET /replies?run=&campaign=&state=&since=``: the page (a viewer at least);
- ``GET /replies/fragment?…``: its live section; ``GET /replies/live?…``: the section's
  server-sent events (:func:`scheduler.dashboard.live.updates`, keyed by the filter, so
  two browsers with different filters never share a read);
- ``POST /replies/{id}/handled``: an operator, with the session's CSRF token; leads back
  to the page with the same filter (303), which says what was done.

The read is :func:`scheduler.views.inbox.read_inbox`; every value from outside (a
reply's text, a name, a campaign's name) is shown as text by the autoescaped templates.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Depends, Form, Request
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from scheduler.dashboard import auth
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.live import stream, updates
from scheduler.dashboard.web import Dashboard, Notice, dashboard_of, fragment, render
from scheduler.views.inbox import STATES, InboxError, InboxView, parse_since, read_inbox

#: A reply's id in a path (else the page's 404).
ReplyId = Annotated[int, PathParam(ge=1, le=2**63 - 1)]
#: The filter's fields, as the query string names them.
FIELDS = ("run", "campaign", "state", "since")


def chosen_filter(query: Any) -> dict[str, str]:
    """The filter's fields given in ``query`` (a mapping or pairs), blanks left out."""
    pairs = query.items() if hasattr(query, "items") else query
    return {k: str(v).strip() for k, v in pairs if k in FIELDS and str(v).strip()}


def read_chosen(dash: Dashboard, chosen: dict[str, str]) -> InboxView:
    """The inbox under ``chosen`` (a wrong value: a 400 page naming it)."""
    now = dash.clock()
    run = chosen.get("run")
    if run is not None and not (run.isdigit() and 0 < int(run) < 2**63):
        raise PageError(400, f"run {run!r}: a run is named by its number.", back="/replies")
    try:
        return read_inbox(dash.ledger, now=now, run_id=int(run) if run else None,
                          campaign=chosen.get("campaign"), state=chosen.get("state"),
                          since=parse_since(chosen.get("since"), now))
    except InboxError as exc:
        raise PageError(400, str(exc), back="/replies") from None


def inbox_context(dash: Dashboard, chosen: dict[str, str],
                  view: InboxView | None = None) -> dict[str, Any]:
    """Everything the inbox and its live section show (``view``: read already)."""
    view = view if view is not None else read_chosen(dash, chosen)
    query = urlencode(chosen)
    suffix = f"?{query}" if query else ""
    tabs = [(state, view.counts.get(state, 0),
             "/replies?" + urlencode({**chosen, "state": state})) for state in STATES]
    everything = {k: v for k, v in chosen.items() if k != "state"}
    return {"inbox": view, "chosen": chosen, "query": query, "states": STATES,
            "tabs": tabs, "all_url": "/replies" + (f"?{urlencode(everything)}"
                                                   if everything else ""),
            "live_url": f"/replies/live{suffix}", "fragment_url": f"/replies/fragment{suffix}"}


def _live_key(chosen: dict[str, str]) -> str:
    """The shared reads' key of one filter's live section."""
    return "/replies/live?" + urlencode(sorted(chosen.items()))


def router() -> APIRouter:
    """The inbox's routes: pages for a viewer, the action for an operator."""
    inbox = APIRouter()
    viewer = [Depends(auth.require_viewer)]
    operator = [Depends(auth.require_operator), Depends(auth.check_csrf)]

    @inbox.get("/replies", response_class=HTMLResponse, dependencies=viewer)
    def replies_page(request: Request) -> Response:
        dash = dashboard_of(request)
        chosen = chosen_filter(request.query_params)
        notice = dash.notice(request.query_params.get("notice"))
        return render(request, "inbox.html", {**inbox_context(dash, chosen), "notice": notice})

    @inbox.get("/replies/fragment", response_class=HTMLResponse, dependencies=viewer)
    def replies_fragment(request: Request) -> Response:
        chosen = chosen_filter(request.query_params)
        return HTMLResponse(fragment(request, "_inbox_live.html",
                                     inbox_context(dashboard_of(request), chosen)))

    @inbox.get("/replies/live", dependencies=viewer)
    async def replies_live(request: Request) -> StreamingResponse:
        chosen = chosen_filter(request.query_params)
        await run_in_threadpool(read_chosen, dashboard_of(request), chosen)  # 400 if wrong
        return stream(updates(request, "_inbox_live.html",
                              lambda dash: read_chosen(dash, chosen),
                              lambda dash, view: inbox_context(dash, chosen, view),
                              key=_live_key(chosen)))

    @inbox.post("/replies/{reply_id}/handled", dependencies=operator)
    async def handled(request: Request, reply_id: ReplyId,
                      back: str = Form("")) -> Response:
        from scheduler.usecases.reply_handling import NoSuchReply, mark_handled

        dash = dashboard_of(request)
        user = auth.current_user(request)
        try:
            done = await run_in_threadpool(mark_handled, dash.ledger, reply_id, user.name,
                                           dash.clock())
        except NoSuchReply as exc:
            raise PageError(404, f"{str(exc).capitalize()}.", back="/replies") from None
        try:  # the filter the page had (anything else in it is dropped)
            chosen = chosen_filter(parse_qsl(back[:2000], max_num_fields=10))
        except ValueError:
            chosen = {}
        dash.shared.forget(_live_key(chosen))  # the next update shows what was done
        text = (f"Reply {reply_id} marked as handled by {done.by}." if done.done
                else f"Reply {reply_id} was handled already, by {done.by}.")
        key = dash.keep(Notice(text, "done" if done.done else "warn"))
        query = urlencode({**chosen, "notice": key})
        return RedirectResponse(f"/replies?{query}#reply-{reply_id}", status_code=303)

    return inbox
