"""A voice survey run end to end: each call's outcome in the ledger is what the sandbox decided,
and the calls in progress never exceeded the campaign's ``max_calls``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from scheduler.service.account_models import cause_text
from tests.channels.support import (
    check_voice_outcomes,
    ledger_rows,
    numbers_sent,
    run_env,
    sms_number,
    voice_project,
)
from tests.incli import in_process

N = 36
MAX_CALLS = 6


def most_at_once(calls: list[dict[str, Any]]) -> int:
    """The most calls in progress at one instant, from the sandbox's real start and end."""
    moments = sorted([(c["startedAt"], 1) for c in calls] + [(c["endedAt"], -1) for c in calls],
                     key=lambda m: (m[0], m[1]))  # an end before a start at the same instant
    most = now = 0
    for _at, change in moments:
        now += change
        most = max(most, now)
    return most


def test_a_voice_survey_records_each_call_as_the_sandbox_decided(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    box = make_sandbox(voice_answer_rate=0.35, voice_digits="129*")
    shop = tmp_path / "shop"
    campaign = voice_project(shop, N, batch=5, max_calls=MAX_CALLS)
    env = run_env(box.base_url, box.api_key, ledger_url)
    run = in_process(env, "run", str(campaign), cwd=shop)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "run 1: completed" in run.stdout, run.stdout

    sends = [s for s in box.sends() if "/voice/" in s["path"]]
    assert numbers_sent(sends, "/voice/") == Counter({sms_number(i): 1 for i in range(N)})
    assert all(s["path"].endswith("/voice/bulk") and len(s["to"]) <= 5 for s in sends)
    for send in sends:  # the flow's {{input.*}} slots, filled per recipient from the CSV
        for person in send["body"]["recipients"]:
            i = int(person["phone"][-4:]) % 10_000
            assert person["variables"] == {"nome": f"Pessoa {i}", "pedido": str(10_000 + i)}

    calls = box.outcomes("voice")
    assert len(calls) == N and all(c["endedAt"] is not None for c in calls)
    check_voice_outcomes(ledger_rows(ledger_url), calls)
    outcomes = Counter(c["outcome"] for c in calls)
    assert outcomes["answered"] and outcomes["not_answered"]
    assert any(c["digits"] for c in calls) and any(c["attempts"] == 2 for c in calls)

    assert 1 < most_at_once(calls) <= MAX_CALLS

    status = json.loads(in_process(env, "status", "1", "--json", cwd=shop).stdout)["outcomes"]
    assert status["answered"] == outcomes["answered"]
    assert status["not_answered"] == outcomes["not_answered"]
    words = Counter(cause_text(c["cause"], c["causeDescription"]) for c in calls
                    if not c["answered"])
    assert status["not_answered_causes"] == dict(words)
    assert set(words) <= {"busy", "no answer", "rejected", "ring time-out", "voicemail"}
