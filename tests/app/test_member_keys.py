"""A campaign run with an account member's key: a ``read`` member stops the run at once with
a message that says why and what to do; a ``write`` member's key sends on its sessions."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.support import clean_env, text_sends
from tests.factories import write_project
from tests.incli import in_process


def member_key(service, permission: str, sessions: list[str]) -> str:
    added = service.api("POST", "/api/v1/account/members",
                        json={"name": "Ana", "email": f"ana.{permission}@example.com",
                              "permission": permission, "sessions": sessions})
    assert added.status_code == 200, added.text
    user_id = added.json()["data"]["user_id"]
    return service.http.post(f"/sandbox/members/{user_id}/key").json()["apiKey"]


def test_a_read_members_key_stops_the_run_at_once_and_says_why(make_sandbox, tmp_path: Path
                                                              ) -> None:
    service = make_sandbox()
    service.create_session("s1")
    campaign = write_project(tmp_path / "shop", 30)
    key = member_key(service, "read", ["s1"])
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=key,
                    CAMPAIGN_VERIFY_GRACE_S="1")
    out = in_process(env, "run", str(campaign), cwd=tmp_path)
    said = out.stdout + out.stderr
    assert out.returncode != 0, said
    assert "Traceback" not in said
    assert "403" in said and "read permission" in said
    assert "write" in said and "owner" in said  # what to do about it
    assert key not in said
    assert service.sends() == []
    status = json.loads(in_process(env, "status", "--json", cwd=tmp_path / "shop").stdout)
    assert status["counts"].get("accepted", 0) == 0


def test_a_write_members_key_sends_on_its_session(make_sandbox, tmp_path: Path) -> None:
    service = make_sandbox()
    service.create_session("s1")
    campaign = write_project(tmp_path / "shop", 3)
    key = member_key(service, "write", ["s1"])
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=key,
                    CAMPAIGN_VERIFY_GRACE_S="1")
    out = in_process(env, "run", str(campaign), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert len(text_sends(service.sends())) == 3
