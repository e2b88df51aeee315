"""``/api/v1/senders/{sender}/pause|resume|retire``: a person holds, lets go or retires a
sender, as ``campaign senders ACTION SENDER --reason TEXT`` does (an operator's token)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import Response

from scheduler.api import reads
from scheduler.api.auth import operator
from scheduler.api.schemas import Problem, SenderChangeIn, SenderChangeResult
from scheduler.ledger.api_tokens import TokenInfo

Operator = Annotated[TokenInfo, Depends(operator)]
SenderId = Annotated[str, PathParam(min_length=1, max_length=200,
                                    description="The sender's id (see GET /api/v1/senders).")]
SUMMARIES = {
    "pause": "Hold a sender: no run or worker sends through it until it is resumed",
    "resume": "Let a held sender send again, in the state it had before",
    "retire": "Retire a sender for good (only resume brings it back)",
}


def add_sender_routes(app: FastAPI, prefix: str, errors: dict[int | str, dict[str, Any]],
                      answer: Any) -> None:
    """Add the three routes to ``app``; ``answer(doc)`` makes a route's JSON response."""
    responses = {**errors, 404: {"model": Problem, "description": "No such sender."}}

    def route(action: str) -> Any:
        def change(request: Request, sender: SenderId, body: SenderChangeIn,
                   token: Operator) -> Response:
            state = request.app.state.api
            return answer(reads.change_sender(state.ledger(), sender, action, body.reason,
                                              state.clock()))

        change.__name__ = f"{action}_sender"
        return change

    for action, summary in SUMMARIES.items():
        app.post(f"{prefix}/senders/{{sender}}/{action}", response_model=SenderChangeResult,
                 responses=responses, tags=["senders"], summary=summary)(route(action))
