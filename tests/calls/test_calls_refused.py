"""Calls refused before anything is placed: a ``cloud_api`` sender of a calls campaign (plan
and run, against a sandbox serving as the configured service), and call steps on the wrong
channel (load time, naming the file and step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.loader import load_campaign
from tests.app.support import clean_env
from tests.calls.support import calls_project
from tests.factories import Project
from tests.incli import in_process


def test_a_cloud_api_sender_of_a_calls_campaign_is_refused_before_any_call(
        make_sandbox: Any, tmp_path: Path) -> None:
    box = make_sandbox()
    made = box.api("POST", "/api/v1/connections/cloud-api", json={
        "sessionId": "oficial", "phoneNumberId": "1234567", "businessAccountId": "7654321",
        "accessToken": "EAAG-test-token"})
    assert made.status_code == 200, made.text
    box.create_session("central")
    root = tmp_path / "shop"
    path = calls_project(root, 3, senders=("central", "oficial"))
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                    CAMPAIGN_STATE_DIR=str(tmp_path / "state"))
    for command in ("plan", "run"):
        out = in_process(env, command, str(path), cwd=root)
        said = " ".join((out.stdout + out.stderr).split())
        assert out.returncode == 1, said
        assert "Traceback" not in said
        assert "oficial" in said and "cloud_api" in said and "calls" in said, said
    assert [s for s in box.sends() if "/calls/" in s["path"]] == []


@pytest.mark.parametrize(("channel", "step", "words"), [
    ("whatsapp", 'type = "call"', "unknown type 'call'"),
    ("calls", 'type = "call_event"\ntitle = "x"\nscheduledTime = "2026-12-01 10:00"',
     "a calls step has type 'call' (or none), not 'call_event'"),
    ("calls", 'type = "call"\nrecord = "sim"', "expected a valid boolean"),
    ("calls", 'type = "call"\ntext = "Olá"', "call has no field 'text'"),
    ("sms", 'type = "call_event"', "an SMS step has type 'sms'"),
])
def test_a_call_step_on_the_wrong_channel_is_refused_at_load(
        tmp_path: Path, channel: str, step: str, words: str) -> None:
    files = Project(tmp_path)
    files.write("data/r.csv", "nome;telefone\nMaria;11987654321\n")
    path = files.campaign(f'name = "c"\nchannel = "{channel}"\nsenders = ["s1"]\n\n'
                          '[recipients]\nfile = "data/r.csv"\n\n'
                          f"[[steps]]\n{step}\n")
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    issues = caught.value.issues
    assert issues and all(i.file == str(path) for i in issues)
    assert any(words in i.message and (i.key or "").startswith("steps[0]")
               for i in issues), issues
