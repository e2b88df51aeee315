"""The ``/api/v1`` application: campaigns, runs, senders and the suppression list over the
CLI's own reads and actions (:mod:`scheduler.api.reads`, :mod:`scheduler.api.starts`),
behind bearer tokens (:mod:`scheduler.api.auth`).

Every route needs a token; the routes that change something (``POST``, ``DELETE``) need an
operator's. Errors are JSON ``{"detail": ...}``: 401/403/429 from the authentication, 404 an
unknown run, number or campaign file, 409 an action the run's status refuses (or a start
the campaign's runs refuse, or one whose ``Idempotency-Key`` is under way), 413 a body over
:data:`MAX_BODY_BYTES`, 422 a body or parameter of the wrong shape (each problem named,
the input never echoed), a campaign file with errors, or an ``Idempotency-Key`` sent before
with another body, 503 a ledger that cannot be reached.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from scheduler.api import reads
from scheduler.api.auth import FailureLimit, caller, operator
from scheduler.api.schemas import (
    NUMBER_PATTERN,
    ControlResult,
    Problem,
    RunsList,
    RunView,
    SendersList,
    Suppression,
    SuppressionAdded,
    SuppressionIn,
    SuppressionRemoved,
)
from scheduler.core.errors import ConfigError, SchedulerError
from scheduler.core.timeutil import Clock, monotonic, utcnow
from scheduler.ledger.api_tokens import TokenInfo
from scheduler.ledger.exceptions import DatabaseUnavailable, RunLocked, RunNotFound, RunStateError

if TYPE_CHECKING:
    from scheduler.dashboard.campaign_files import Check
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings

#: The largest request body accepted (413 above it).
MAX_BODY_BYTES = 64 * 1024
PREFIX = "/api/v1"
VERSION = "1.0.0"

Viewer = Annotated[TokenInfo, Depends(caller)]
Operator = Annotated[TokenInfo, Depends(operator)]
RunId = Annotated[int, PathParam(ge=1, le=2_147_483_647, description="The run's id (see "
                                                                     "GET /api/v1/runs).")]
Number = Annotated[str, PathParam(pattern=NUMBER_PATTERN, max_length=21,
                                  description="The number with its country code, digits only.")]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": what} for code, what in (
        (401, "No token, or an unknown or revoked one."),
        (422, "A parameter or body of the wrong shape."),
        (429, "Too many failed authentications from this address."))}
ACTION_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS, 403: {"model": Problem, "description": "A viewer's token: it cannot act."}}


@dataclass
class ApiState:
    """What the routes use: the settings, the ledger, the clock, the failure limit."""

    settings: Settings | None
    ledger_: Ledger | None
    clock: Clock
    failures: FailureLimit
    extra: dict[str, Any] = field(default_factory=dict)

    def ledger(self) -> Ledger:
        """The ledger (an app made only for its OpenAPI document has none)."""
        if self.ledger_ is None:
            raise HTTPException(503, detail="this API has no ledger")
        return self.ledger_

    def both(self) -> tuple[Ledger, Settings]:
        """The ledger and the settings."""
        ledger = self.ledger()
        assert self.settings is not None
        return ledger, self.settings


def _state(request: Request) -> ApiState:
    state: ApiState = request.app.state.api
    return state


def _json(doc: Any, status: int = 200) -> Response:
    """``doc`` as the command line prints it (``json.dumps``, so the same numbers)."""
    return Response(json.dumps(doc, ensure_ascii=False), status_code=status,
                    media_type="application/json")


def _number(value: str) -> str:
    return value.removeprefix("+")


class BodyLimit:
    """ASGI middleware: a body over ``limit`` bytes is refused with 413 before it is read."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: MutableMapping[str, Any],
                       receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
                       send: Callable[[MutableMapping[str, Any]], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        too_big = JSONResponse({"detail": f"the body is over {self.limit:,} bytes"}, 413)
        if length is not None:
            if not length.isdigit() or int(length) > self.limit:
                await too_big(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        chunks, size, more = [], 0, True  # chunked: read it here, up to the limit
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.limit:
                await too_big(scope, receive, send)
                return
        body, sent = b"".join(chunks), False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _problems(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    shown = [{"loc": list(err.get("loc", ())), "msg": err.get("msg", ""),
              "type": err.get("type", "")} for err in exc.errors()]
    return JSONResponse({"detail": shown}, 422)


def _scheduler_error(request: Request, exc: Exception) -> Response:
    from scheduler.api.starts import NoSuchCampaign
    from scheduler.campaign.exceptions import CampaignError
    from scheduler.ledger.idempotency import KeyInUse, KeyReused
    from scheduler.usecases.sender_control import UnknownSender

    if isinstance(exc, (RunNotFound, UnknownSender, NoSuchCampaign)):
        code = 404
    elif isinstance(exc, (RunStateError, RunLocked, KeyInUse)) or \
            type(exc).__name__ == "RunRefused":
        code = 409
    elif isinstance(exc, (KeyReused, CampaignError)):
        code = 422
    elif isinstance(exc, (DatabaseUnavailable, ConfigError)):
        code = 503
    else:
        code = 400
    return JSONResponse({"detail": str(exc)}, code)


def create_api(settings: Settings | None = None, ledger: Ledger | None = None, *,
               clock: Clock = utcnow, monotonic_s: Callable[[], float] = monotonic,
               check: Check | None = None) -> FastAPI:
    """The ``/api/v1`` app over ``ledger`` (None: for its OpenAPI document only); ``check``
    validates and plans a campaign file (``campaign plan``'s, handed in by the command as
    the dashboard's is; None: the files are listed unchecked)."""
    from scheduler.settings.api import ApiSettings

    per_minute = (settings.api if settings is not None else ApiSettings()).failed_auth_per_minute
    app = FastAPI(title="campaign API", version=VERSION, docs_url=None, redoc_url=None,
                  openapi_url=f"{PREFIX}/openapi.json",
                  description="Campaign files, runs, senders and the suppression list of "
                              "a campaign project, over the same reads and actions as the "
                              "`campaign` command. "
                              "Every route needs `Authorization: Bearer TOKEN` (`campaign "
                              "api-token create`); POST and DELETE need an operator's token.")
    app.state.api = ApiState(settings, ledger, clock, FailureLimit(per_minute, monotonic_s),
                             extra={"check": check})
    app.add_middleware(BodyLimit)
    app.add_exception_handler(RequestValidationError, _problems)
    app.add_exception_handler(SchedulerError, _scheduler_error)

    @app.get(f"{PREFIX}/runs", response_model=RunsList, responses=ERRORS, tags=["runs"],
             summary="List every run, newest first (as `campaign runs --json`)")
    def list_runs(request: Request, token: Viewer) -> Response:
        state = _state(request)
        ledger, settings = state.both()
        return _json(reads.runs_document(ledger, settings, state.clock()))

    @app.get(f"{PREFIX}/runs/{{run_id}}", response_model=RunView, tags=["runs"],
             responses={**ERRORS, 404: {"model": Problem, "description": "No such run."}},
             summary="One run's view (as `campaign status --json RUN`)")
    def read_run(request: Request, run_id: RunId, token: Viewer) -> Response:
        state = _state(request)
        ledger, settings = state.both()
        return _json(reads.run_document(ledger, settings, run_id, state.clock()))

    def _control(request: Request, run_id: int, action: str) -> Response:
        state = _state(request)
        ledger, settings = state.both()
        return _json(reads.control_run(ledger, settings, run_id, action, state.clock()))

    action_errors = {**ACTION_ERRORS, 404: {"model": Problem, "description": "No such run."},
                     409: {"model": Problem, "description": "The run's status refuses it."}}

    @app.post(f"{PREFIX}/runs/{{run_id}}/pause", response_model=ControlResult, tags=["runs"],
              responses=action_errors, summary="Pause a run (as `campaign pause RUN`)")
    def pause_run(request: Request, run_id: RunId, token: Operator) -> Response:
        return _control(request, run_id, "pause")

    @app.post(f"{PREFIX}/runs/{{run_id}}/resume", response_model=ControlResult,
              tags=["runs"], responses=action_errors,
              summary="Resume a run; a live `campaign serve` worker continues it")
    def resume_run(request: Request, run_id: RunId, token: Operator) -> Response:
        return _control(request, run_id, "resume")

    @app.post(f"{PREFIX}/runs/{{run_id}}/cancel", response_model=ControlResult,
              tags=["runs"], responses=action_errors,
              summary="Cancel a run (as `campaign cancel RUN`)")
    def cancel_run(request: Request, run_id: RunId, token: Operator) -> Response:
        return _control(request, run_id, "cancel")

    @app.get(f"{PREFIX}/senders", response_model=SendersList, responses=ERRORS,
             tags=["senders"], summary="Every sender (as `campaign senders --json`)")
    def list_senders(request: Request, token: Viewer) -> Response:
        state = _state(request)
        ledger, settings = state.both()
        return _json(reads.senders_document(ledger, settings, state.clock()))

    from scheduler.api.campaign_routes import add_campaign_routes
    from scheduler.api.run_routes import add_run_routes
    from scheduler.api.sender_routes import add_sender_routes

    add_campaign_routes(app, PREFIX, ERRORS, ACTION_ERRORS, _json)
    add_run_routes(app, PREFIX, ERRORS, ACTION_ERRORS, _json)
    add_sender_routes(app, PREFIX, ACTION_ERRORS, _json)
    from scheduler.api.privacy_routes import add_privacy_routes  # issue 36: a person's data

    add_privacy_routes(app, PREFIX, ACTION_ERRORS, _json)

    not_listed: dict[int | str, dict[str, Any]] = {
        404: {"model": Problem, "description": "The number is not listed."}}

    @app.get(f"{PREFIX}/suppressions/{{number}}", response_model=Suppression,
             responses={**ERRORS, **not_listed}, tags=["suppressions"],
             summary="Look a number up in the suppression list")
    def read_suppression(request: Request, number: Number, token: Viewer) -> Response:
        found = reads.suppression_of(_state(request).ledger(), _number(number))
        if found is None:
            raise HTTPException(404, detail=f"{_number(number)} is not on the suppression list")
        return _json(found)

    @app.post(f"{PREFIX}/suppressions", response_model=SuppressionAdded, status_code=201,
              responses=ACTION_ERRORS, tags=["suppressions"],
              summary="Add a number: never sent anything again; its pending rows skipped")
    def add_suppression(request: Request, body: SuppressionIn, token: Operator) -> Response:
        number = _number(body.number)
        added = reads.add_suppression(_state(request).ledger(), number, body.reason)
        return _json({"number": number, "added": added}, 201 if added else 200)

    @app.delete(f"{PREFIX}/suppressions/{{number}}", response_model=SuppressionRemoved,
                responses={**ACTION_ERRORS, **not_listed}, tags=["suppressions"],
                summary="Remove a number (rows already skipped stay skipped)")
    def remove_suppression(request: Request, number: Number, token: Operator) -> Response:
        if not reads.remove_suppression(_state(request).ledger(), _number(number)):
            raise HTTPException(404, detail=f"{_number(number)} is not on the suppression list")
        return _json({"number": _number(number), "removed": True})

    return app


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI 3.1 document (``campaign api --openapi``)."""
    return create_api().openapi()
