"""Every error a visitor can cause is a page that says what happened and what to do:

- 404: no such page, no such run (``/runs/99``, ``/runs/abc``), no such report format;
- 409: the run does not allow it now (finished, being dispatched, nothing to send again);
- 400: a form with a wrong value; 403 / 429: refused by auth (its message kept);
- 503: the ledger cannot be read or written (its one-line reason).

Never a 500 or a traceback for a visitor's mistake (a bug is :mod:`.headers`' 500 page).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from scheduler.core.errors import SchedulerError
from scheduler.dashboard.web import render
from scheduler.ledger.exceptions import (
    DatabaseUnavailable,
    LedgerError,
    RunLocked,
    RunNotFound,
    RunStateError,
)

#: The title of each status the dashboard answers with.
TITLES = {400: "Bad request", 403: "Not allowed", 404: "Not found", 405: "Not allowed",
          409: "Not possible now", 413: "Too large", 429: "Too many attempts",
          503: "Ledger unavailable"}


class PageError(SchedulerError):
    """An error shown as a page with ``status`` (404, 409, …) and a message."""

    def __init__(self, status: int, message: str, *, back: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        #: Where the page's link leads (the run's page, say); the overview by default.
        self.back = back


def error_page(request: Request, status: int, message: str, *, back: str | None = None,
               headers: dict[str, str] | None = None) -> Response:
    """The error page: its title, ``message`` (escaped like every value) and a way back."""
    return render(request, "error.html",
                  {"status": status, "title": TITLES.get(status, "Error"),
                   "message": message, "back": back or "/"},
                  status=status, headers=headers)


def _run_back(request: Request) -> str | None:
    run_id = request.path_params.get("run_id")
    return f"/runs/{run_id}" if isinstance(run_id, int) else None


async def _page_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PageError)
    return error_page(request, exc.status, exc.message, back=exc.back)


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if status == 404:
        message = (exc.detail if exc.detail and exc.detail != "Not Found"
                   else f"There is no page at {request.url.path}.")
    elif status == 405:
        message = f"{request.method} is not how {request.url.path} is used."
    else:
        message = str(exc.detail)
    return error_page(request, status, message, headers=dict(exc.headers or {}))


def _field(error: dict[str, Any]) -> str:
    return ".".join(str(part) for part in error.get("loc", ())[1:]) or "the request"


async def _invalid(request: Request, exc: Exception) -> Response:
    """A path that names no run (``/runs/abc``) is a 404; a wrong form value a 400."""
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(e.get("loc", ("",))[0] == "path" for e in errors):
        return error_page(request, 404, f"There is no page at {request.url.path} (a run is "
                                         "named by its number, as `campaign runs` lists it).")
    said = "; ".join(f"{_field(e)}: {e.get('msg', 'wrong value')}" for e in errors)
    return error_page(request, 400, f"The form was not understood ({said}).",
                      back=_run_back(request))


async def _ledger(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SchedulerError)
    back = _run_back(request)
    if isinstance(exc, RunNotFound):
        return error_page(request, 404, f"There is no run {exc.run_id} in this ledger "
                                        "(the overview lists every run).")
    if isinstance(exc, RunStateError | RunLocked):
        return error_page(request, 409, str(exc), back=back)
    if isinstance(exc, DatabaseUnavailable | LedgerError):
        return error_page(request, 503, f"The ledger could not be read or written: {exc}. "
                                        "Try again in a moment.", back=back)
    return error_page(request, 409, str(exc), back=back)


def install_handlers(app: FastAPI) -> None:
    """Route every error a visitor can cause to its page."""
    app.add_exception_handler(PageError, _page_error)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(SchedulerError, _ledger)
