"""``/api/v1/runs/{run_id}/events`` (a viewer's token) and ``/api/v1/runs/{run_id}/resend``
(an operator's): a run's newest events and replies, and its failed or unknown rows queued
again, as ``campaign status --json``'s ``view.events`` and ``campaign resend`` have them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import Response

from scheduler.api import reads
from scheduler.api.auth import caller, operator
from scheduler.api.schemas import Problem, RecentEvents, ResendIn, ResendResult
from scheduler.ledger.api_tokens import TokenInfo

Viewer = Annotated[TokenInfo, Depends(caller)]
Operator = Annotated[TokenInfo, Depends(operator)]
RunId = Annotated[int, PathParam(ge=1, le=2_147_483_647, description="The run's id.")]


def add_run_routes(app: FastAPI, prefix: str, errors: dict[int | str, dict[str, Any]],
                   action_errors: dict[int | str, dict[str, Any]], answer: Any) -> None:
    """Add the two routes to ``app``; ``answer(doc)`` makes a route's JSON response."""
    missing: dict[int | str, dict[str, Any]] = {
        404: {"model": Problem, "description": "No such run."}}

    @app.get(f"{prefix}/runs/{{run_id}}/events", response_model=RecentEvents, tags=["runs"],
             responses={**errors, **missing},
             summary="A run's newest webhook events and replies, newest first")
    def run_events(request: Request, run_id: RunId, token: Viewer) -> Response:
        return answer(reads.run_events(request.app.state.api.ledger(), run_id))

    @app.post(f"{prefix}/runs/{{run_id}}/resend", response_model=ResendResult, tags=["runs"],
              responses={**action_errors, **missing},
              summary="Queue a run's failed, unproven or unknown rows again "
                      "(as `campaign resend`)")
    def resend_run(request: Request, run_id: RunId, body: ResendIn,
                   token: Operator) -> Response:
        state = request.app.state.api
        ledger, settings = state.both()
        return answer(reads.resend(ledger, settings, run_id, body.states(), state.clock()))
