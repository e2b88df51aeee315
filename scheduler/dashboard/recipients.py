"""One recipient's story as a page, found by number or by name.

- ``GET /recipients?q=``: the search: a number (any common format) leads to its page
  (303); words are the start of a name's words (case and accents aside), the numbers
  found listed (the names' keys by index, then their numbers:
  :mod:`scheduler.ledger.queries.names`);
- ``GET /recipients/{number}``: every delivery, attempt, variant, event, reply, click and
  opt-out of that number across runs, in time order, with the sender and the decisions
  taken (:func:`scheduler.views.recipient_story.read_story`).

A viewer at least; the values from outside (names, replies, errors) shown as text.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from scheduler.dashboard import auth
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.web import dashboard_of, render
from scheduler.views.recipient_story import (
    NumberError,
    find_by_name,
    looks_like_number,
    normalise_number,
    read_story,
)

#: The region of a number written without its country code (``?country=`` changes it).
REGION = "BR"
#: The longest search taken (a name; longer is refused).
MAX_QUERY = 100


def router() -> APIRouter:
    """The recipient pages' routes (a viewer at least)."""
    pages = APIRouter(dependencies=[Depends(auth.require_viewer)])

    @pages.get("/recipients", response_class=HTMLResponse)
    async def search(request: Request, q: str = "", country: str = REGION) -> Response:
        dash = dashboard_of(request)
        words = q.strip()
        if len(words) > MAX_QUERY:
            raise PageError(400, f"A search is a number or a name of at most {MAX_QUERY} "
                                 "characters.", back="/recipients")
        if words and looks_like_number(words):
            try:
                digits = normalise_number(words, country)
            except NumberError as exc:
                raise PageError(400, str(exc), back="/recipients") from None
            return RedirectResponse(f"/recipients/{quote(digits)}", status_code=303)
        found = await run_in_threadpool(find_by_name, dash.ledger, words) if words else []
        return render(request, "recipients.html", {"q": words, "found": found})

    @pages.get("/recipients/{number}", response_class=HTMLResponse)
    async def story(request: Request, number: str, country: str = REGION) -> Response:
        dash = dashboard_of(request)
        try:
            digits = normalise_number(number, country)
        except NumberError as exc:
            raise PageError(404, str(exc), back="/recipients") from None
        if digits != number:
            return RedirectResponse(f"/recipients/{quote(digits)}", status_code=303)
        told = await run_in_threadpool(read_story, dash.ledger, digits, now=dash.clock())
        return render(request, "recipient.html", {"story": told, "q": ""})

    return pages
