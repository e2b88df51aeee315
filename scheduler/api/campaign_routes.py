"""``/api/v1/campaigns`` (a viewer's token): the project's campaign files with what
``campaign validate`` and ``campaign plan`` say of them; ``POST /api/v1/runs`` (an
operator's): a new run of one of them, planned as ``campaign run FILE`` plans it and left to
a live ``campaign serve`` worker, behind a required ``Idempotency-Key`` header
(:mod:`scheduler.api.starts`); ``/api/v1/runs/{run_id}/replies``: a run's newest replies.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import Response

from scheduler.api import starts
from scheduler.api.auth import caller, operator
from scheduler.api.schemas import (
    CampaignFile,
    CampaignsList,
    Problem,
    Replies,
    StartIn,
    StartResult,
)
from scheduler.ledger.api_tokens import TokenInfo
from scheduler.ledger.idempotency import MAX_KEY_CHARS

Viewer = Annotated[TokenInfo, Depends(caller)]
Operator = Annotated[TokenInfo, Depends(operator)]
RunId = Annotated[int, PathParam(ge=1, le=2_147_483_647, description="The run's id.")]
FileName = Annotated[str, PathParam(min_length=1, max_length=300,
                                    description="The file's name under campaigns/.")]
IdempotencyKey = Annotated[str, Header(
    alias="Idempotency-Key", min_length=1, max_length=MAX_KEY_CHARS,
    description="A key of the client's (a UUID): the same key with the same body starts "
                "one run, and answers with it again; with another body, 422.")]


def add_campaign_routes(app: FastAPI, prefix: str, errors: dict[int | str, dict[str, Any]],
                        action_errors: dict[int | str, dict[str, Any]], answer: Any) -> None:
    """Add the routes to ``app``; ``answer(doc, status)`` makes a route's JSON response."""
    files = starts.campaign_files(app.state.api.settings, app.state.api.extra.get("check"))
    missing: dict[int | str, dict[str, Any]] = {
        404: {"model": Problem, "description": "No such campaign file."}}

    @app.get(f"{prefix}/campaigns", response_model=CampaignsList, responses=errors,
             tags=["campaigns"],
             summary="The project's campaign files with their validate and plan results")
    def list_campaigns(request: Request, token: Viewer) -> Response:
        return answer({"campaigns": [starts.describe(check, plan=False)
                                     for check in files.read()]})

    @app.get(f"{prefix}/campaigns/{{name:path}}", response_model=CampaignFile,
             responses={**errors, **missing}, tags=["campaigns"],
             summary="One campaign file: validate's errors and `campaign plan --json`'s "
                     "report")
    def read_campaign(request: Request, name: FileName, token: Viewer) -> Response:
        return answer(starts.describe(files.one(starts.find_file(files, name)), plan=True))

    @app.post(f"{prefix}/runs", response_model=StartResult, status_code=201, tags=["runs"],
              responses={**action_errors, **missing,
                         200: {"model": StartResult,
                               "description": "The run this Idempotency-Key started before."},
                         409: {"model": Problem,
                               "description": "The campaign has an unfinished run, a "
                                              "one-off campaign finished already, or a "
                                              "request with this key is under way."},
                         422: {"model": Problem,
                               "description": "A body of the wrong shape, a campaign file "
                                              "with errors, or a key sent before with "
                                              "another body."}},
              summary="Start a run of a campaign file (as `campaign run FILE`); a live "
                      "`campaign serve` worker sends it")
    def start_run(request: Request, body: StartIn, key: IdempotencyKey,
                  token: Operator) -> Response:
        state = request.app.state.api
        ledger, settings = state.both()
        doc, planned = starts.start_run(ledger, settings, files, key, body.model_dump(),
                                        state.clock())
        return answer(doc, 201 if planned else 200)

    @app.get(f"{prefix}/runs/{{run_id}}/replies", response_model=Replies, tags=["runs"],
             responses={**errors, 404: {"model": Problem, "description": "No such run."}},
             summary="A run's newest replies, newest first")
    def run_replies(request: Request, run_id: RunId, token: Viewer,
                    limit: Annotated[int, Query(ge=1, le=500)] = 50) -> Response:
        from scheduler.api.reads import run_replies as read

        return answer(read(request.app.state.api.ledger(), run_id, limit))
