"""``/api/v1/people/export`` and ``/api/v1/people/forget``: one person's data exported as JSON
or erased, as ``campaign person export`` / ``person forget`` do (an operator's token; the
audit records the token's name). The number travels in the body, never in a URL."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from scheduler.api.auth import operator
from scheduler.ledger.api_tokens import TokenInfo
from scheduler.privacy.person import Forgotten, PersonExport

Operator = Annotated[TokenInfo, Depends(operator)]


class ExportIn(BaseModel):
    """Whose data: the number in any common format; why (kept in the audit)."""

    model_config = ConfigDict(extra="forbid")

    number: str = Field(min_length=3, max_length=40)
    reason: str | None = Field(None, max_length=500)


class ForgetIn(BaseModel):
    """Whose data to erase, and why (required; kept in the audit)."""

    model_config = ConfigDict(extra="forbid")

    number: str = Field(min_length=3, max_length=40)
    reason: str = Field(min_length=1, max_length=500)


def add_privacy_routes(app: FastAPI, prefix: str, errors: dict[int | str, dict[str, Any]],
                       answer: Any) -> None:
    """Add the two routes to ``app``; ``answer(doc)`` makes a route's JSON response."""

    def settings_of(request: Request) -> Any:
        state = request.app.state.api
        if state.settings is None:
            raise HTTPException(503, detail="this API has no settings")
        return state, state.settings

    @app.post(f"{prefix}/people/export", response_model=PersonExport, responses=errors,
              tags=["privacy"], summary="Everything the ledger holds about a number "
                                        "(as `campaign person export`)")
    def export_person_route(request: Request, body: ExportIn, token: Operator) -> Response:
        from scheduler.ledger.privacy_key import erasure_key
        from scheduler.privacy.person import export_person

        state, settings = settings_of(request)
        found = export_person(state.ledger().engine, body.number, key=erasure_key(settings),
                              who=token.name, via="api", now=state.clock(),
                              reason=body.reason)
        return answer(found.model_dump(mode="json"))

    @app.post(f"{prefix}/people/forget", response_model=Forgotten, responses=errors,
              tags=["privacy"], summary="Erase a person's data from every table "
                                        "(as `campaign person forget`)")
    def forget_person_route(request: Request, body: ForgetIn, token: Operator) -> Response:
        from scheduler.ledger.privacy_key import erasure_key
        from scheduler.privacy.person import forget_person

        state, settings = settings_of(request)
        key = erasure_key(settings, create=True)
        assert key is not None
        done = forget_person(state.ledger().engine, body.number, key=key, who=token.name,
                             via="api", reason=body.reason, now=state.clock())
        return answer(done.model_dump(mode="json"))
