"""``/api/v1/account/members`` (add, update, remove, and our listing) and the member keys.

The owner alone reaches these endpoints (the gateway refuses members, see
:mod:`scheduler.sandbox.members`). Bodies are the client's models, so the e-mail and the
permission (``read`` | ``write``) are checked the same way on both sides; a member answer is
``{success, data: {user_id, name, email, permission, sessions}}``. ``POST
/sandbox/members/{user_id}/key`` hands out a member's own API key, as the dashboard would.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from scheduler.sandbox.bodies import parse_body
from scheduler.sandbox.members import MemberRecord
from scheduler.sandbox.routes_sessions import sandbox_of
from scheduler.service.members_client import (
    MEMBERS_PATH,
    AddMemberBody,
    RemoveMemberBody,
    UpdateMemberBody,
)

router = APIRouter()
control = APIRouter(prefix="/sandbox")


def _answer(member: MemberRecord) -> JSONResponse:
    return JSONResponse({"success": True, "data": member.record()})


@router.get(MEMBERS_PATH)
async def list_members(request: Request) -> JSONResponse:
    """Every member of the account (ours: the interface shows no listing)."""
    members = sandbox_of(request).members.members.values()
    return JSONResponse({"success": True, "data": [m.record() for m in members]})


@router.post(MEMBERS_PATH)
async def add_member(request: Request) -> JSONResponse:
    """Add a member with a permission on some of the account's sessions."""
    body, _ = await parse_body(request, AddMemberBody)
    desk = sandbox_of(request).members
    return _answer(desk.add(body.name, body.email, body.permission, body.sessions))


@router.put(MEMBERS_PATH)
async def update_member(request: Request) -> JSONResponse:
    """Replace a member's permission and sessions."""
    body, _ = await parse_body(request, UpdateMemberBody)
    desk = sandbox_of(request).members
    return _answer(desk.update(body.user_id, body.permission, body.sessions))


@router.delete(MEMBERS_PATH)
async def remove_member(request: Request) -> JSONResponse:
    """Remove a member (``{user_id}`` in the DELETE's body); its key stops working."""
    body, _ = await parse_body(request, RemoveMemberBody)
    return _answer(sandbox_of(request).members.remove(body.user_id))


@control.post("/members/{user_id}/key")
async def member_key(request: Request, user_id: int) -> JSONResponse:
    """A member's own API key (the sandbox's stand-in for the dashboard)."""
    return JSONResponse({"userId": user_id, "apiKey": sandbox_of(request).members.key_of(user_id)})
