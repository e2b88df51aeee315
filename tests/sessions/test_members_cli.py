"""``campaign members``: list, add, update and remove account members from the command line,
against a sandbox in its own process; bad input and a member's key are one clean error line."""

from __future__ import annotations

import json

import httpx

from tests.sessions.support import Cli, SandboxProcess
from tests.sessions.test_sessions_cli import assert_clean_failure


def owner_creates(sandbox: SandboxProcess, *session_ids: str) -> None:
    for session_id in session_ids:
        response = httpx.post(f"{sandbox.base_url}/api/v1/sessions",
                              headers={"Authorization": sandbox.api_key},
                              json={"sessionId": session_id, "type": "unofficial"}, timeout=10)
        assert response.status_code in (200, 409), response.text
        sandbox.scan(session_id)


def test_members_add_list_update_remove(cli: Cli, service_env: dict[str, str],
                                        sandbox_process: SandboxProcess) -> None:
    owner_creates(sandbox_process, "mem-a", "mem-b")
    added = cli("members", "add", "Ana Souza", "ana.cli@example.com", "-p", "read",
                "-s", "mem-a", "-s", "mem-b", "--json", env=service_env)
    assert added.code == 0, added.both
    member = json.loads(added.out)
    assert (member["email"], member["permission"], member["sessions"]) == (
        "ana.cli@example.com", "read", ["mem-a", "mem-b"])
    user_id = str(member["user_id"])
    listed = cli("members", "list", env=service_env)
    assert listed.code == 0, listed.both
    line = next(x for x in listed.out.splitlines() if "ana.cli@example.com" in x)
    assert line.startswith(user_id) and "read on mem-a, mem-b" in line
    updated = cli("members", "update", user_id, "-p", "write", "-s", "mem-b", env=service_env)
    assert updated.code == 0, updated.both
    assert "updated member" in updated.out and "write on mem-b" in updated.out
    removed = cli("members", "remove", user_id, env=service_env)
    assert removed.code == 0 and "removed member" in removed.out, removed.both
    after = cli("members", "list", "--json", env=service_env)
    assert user_id not in {str(m["user_id"]) for m in json.loads(after.out)}
    again = cli("members", "remove", user_id, env=service_env)
    assert_clean_failure(again)
    assert "Member not found" in again.err


def test_bad_email_and_permission_are_refused_before_sending(
        cli: Cli, service_env: dict[str, str], sandbox_process: SandboxProcess) -> None:
    owner_creates(sandbox_process, "mem-a")
    bad_email = cli("members", "add", "Bia", "bia-at-example.com", "-p", "read", "-s", "mem-a",
                    env=service_env)
    assert_clean_failure(bad_email)
    assert "e-mail" in bad_email.err
    bad_permission = cli("members", "add", "Bia", "bia@example.com", "-p", "admin",
                         "-s", "mem-a", env=service_env)
    assert_clean_failure(bad_permission)
    assert "use read" in bad_permission.err
    listed = cli("members", "list", "--json", env=service_env)
    assert "bia" not in listed.out


def test_a_members_key_cannot_manage_members(cli: Cli, service_env: dict[str, str],
                                             sandbox_process: SandboxProcess) -> None:
    owner_creates(sandbox_process, "mem-a")
    added = cli("members", "add", "Caio", "caio@example.com", "-p", "write", "-s", "mem-a",
                "--json", env=service_env)
    user_id = json.loads(added.out)["user_id"]
    key = httpx.post(f"{sandbox_process.base_url}/sandbox/members/{user_id}/key",
                     timeout=10).json()["apiKey"]
    as_member = {**service_env, "CAMPAIGN_API_KEY": key}
    refused = cli("members", "add", "Dani", "dani@example.com", "-p", "read", "-s", "mem-a",
                  env=as_member)
    assert_clean_failure(refused)
    assert "403" in refused.err and "owner" in refused.err
    assert key not in refused.both
