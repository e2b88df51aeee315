"""Account members through the client and the sandbox: add, update, remove (the DELETE with
its body), local validation of e-mail and permission, and the permission matrix of member
keys (owner, ``write`` member, ``read`` member, a member outside the session)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import (
    Forbidden,
    InvalidRequest,
    RequestRejected,
    SessionNotFound,
    Unauthorized,
)


@pytest.fixture
async def owner(sandbox: Any) -> AsyncIterator[ServiceClient]:
    """The owner's client, with two connected sessions ``s1`` and ``s2``."""
    sandbox.create_session("s1")
    sandbox.create_session("s2")
    async with ServiceClient(sandbox.base_url, sandbox.api_key, timeout_s=5) as c:
        yield c


def member_client(sandbox: Any, user_id: int) -> ServiceClient:
    key = sandbox.http.post(f"/sandbox/members/{user_id}/key").json()["apiKey"]
    return ServiceClient(sandbox.base_url, key, timeout_s=5)


async def test_add_update_list_remove_round_trip(owner: ServiceClient, sandbox: Any) -> None:
    added = await owner.add_member("Ana", "ana@example.com", "read", ["s1"])
    assert (added.name, added.email, added.permission, added.sessions) == (
        "Ana", "ana@example.com", "read", ["s1"])
    other = await owner.add_member("Bia", "bia@example.com", "write", ["s1", "s2"])
    assert other.user_id != added.user_id
    updated = await owner.update_member(added.user_id, "write", ["s2"])
    assert (updated.permission, updated.sessions) == ("write", ["s2"])
    listed = {m.user_id: m for m in await owner.list_members()}
    assert listed[added.user_id].sessions == ["s2"] and set(listed) == {added.user_id,
                                                                         other.user_id}
    removed = await owner.remove_member(added.user_id)
    assert removed.user_id == added.user_id
    assert [m.user_id for m in await owner.list_members()] == [other.user_id]
    with pytest.raises(RequestRejected, match="Member not found"):
        await owner.remove_member(added.user_id)


async def test_a_removed_members_key_stops_working(owner: ServiceClient, sandbox: Any) -> None:
    member = await owner.add_member("Ana", "ana@example.com", "write", ["s1"])
    async with member_client(sandbox, member.user_id) as ana:
        assert [s.sessionId for s in await ana.list_sessions()] == ["s1"]
        await owner.remove_member(member.user_id)
        with pytest.raises(Unauthorized):
            await ana.list_sessions()


@pytest.mark.parametrize(("values", "problem"), [
    ({"email": "not-an-address"}, "email"),
    ({"email": "ana@example"}, "email"),
    ({"permission": "admin"}, "permission"),
    ({"name": ""}, "name"),
    ({"sessions": [""]}, "sessions"),
])
async def test_add_is_checked_before_sending(owner: ServiceClient, sandbox: Any,
                                             values: dict[str, Any], problem: str) -> None:
    args = {"name": "Ana", "email": "ana@example.com", "permission": "read",
            "sessions": ["s1"], **values}
    with pytest.raises(InvalidRequest, match=problem):
        await owner.add_member(**args)
    assert sandbox.state.members.members == {}


async def test_the_sandbox_refuses_bad_bodies_itself(owner: ServiceClient, sandbox: Any) -> None:
    path = "/api/v1/account/members"
    bad_email = {"name": "Ana", "email": "nope", "permission": "read", "sessions": ["s1"]}
    assert sandbox.api("POST", path, json=bad_email).status_code == 400
    bad_permission = {**bad_email, "email": "ana@example.com", "permission": "owner"}
    assert sandbox.api("POST", path, json=bad_permission).status_code == 400
    unknown = {**bad_email, "email": "ana@example.com", "sessions": ["nope"]}
    answer = sandbox.api("POST", path, json=unknown)
    assert answer.status_code == 400 and "nope" in answer.json()["error"]
    await owner.add_member("Ana", "ana@example.com", "read", ["s1"])
    with pytest.raises(RequestRejected) as taken:
        await owner.add_member("Ana 2", "ANA@example.com", "read", ["s1"])
    assert taken.value.status == 409
    with pytest.raises(RequestRejected):
        await owner.update_member(99, "read", ["s1"])
    assert sandbox.api("DELETE", path, json={}).status_code == 400


async def test_permission_matrix(owner: ServiceClient, sandbox: Any) -> None:
    writer = await owner.add_member("W", "w@example.com", "write", ["s1"])
    reader = await owner.add_member("R", "r@example.com", "read", ["s1"])
    outsider = await owner.add_member("O", "o@example.com", "write", ["s2"])
    to = "5511988887777"
    # the owner reaches every session
    assert {s.sessionId for s in await owner.list_sessions()} == {"s1", "s2"}
    assert (await owner.send_text("s1", to, "owner")).messageId
    assert (await owner.send_text("s2", to, "owner")).messageId
    async with member_client(sandbox, writer.user_id) as w:
        assert [s.sessionId for s in await w.list_sessions()] == ["s1"]
        assert (await w.get_session("s1")).sessionId == "s1"
        assert (await w.send_text("s1", to, "writer")).messageId
        await w.set_webhook("s1", "http://127.0.0.1:9/hook")
        with pytest.raises(SessionNotFound):
            await w.send_text("s2", to, "not mine")
        with pytest.raises(SessionNotFound):
            await w.get_session("s2")
        with pytest.raises(Forbidden):
            await w.create_session("s3")
        with pytest.raises(Forbidden, match="owner"):
            await w.add_member("X", "x@example.com", "write", ["s1"])
    async with member_client(sandbox, reader.user_id) as r:
        assert [s.sessionId for s in await r.list_sessions()] == ["s1"]
        assert (await r.get_session("s1")).sessionId == "s1"
        assert (await r.get_limits("s1")) is not None
        with pytest.raises(Forbidden, match="read permission"):
            await r.send_text("s1", to, "reader")
        with pytest.raises(Forbidden):
            await r.set_webhook("s1", "http://127.0.0.1:9/hook")
        with pytest.raises(SessionNotFound):
            await r.send_text("s2", to, "not mine")
    async with member_client(sandbox, outsider.user_id) as o:
        assert [s.sessionId for s in await o.list_sessions()] == ["s2"]
        with pytest.raises(SessionNotFound):
            await o.get_session("s1")
        with pytest.raises(SessionNotFound):
            await o.send_text("s1", to, "outsider")
        with pytest.raises(SessionNotFound):
            await o.get_limits("s1")
    texts = [send["body"]["text"] for send in sandbox.sends()]
    assert texts == ["owner", "owner", "writer"]
