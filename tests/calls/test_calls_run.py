"""A ``calls`` campaign end to end against the sandbox: one WhatsApp call at a time per session
(from the sandbox's own times), each call's outcome in the ledger, ``campaign status`` and the
report as the sandbox decided it, even with every event repeated by the connection layer."""

from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries
from scheduler.sandbox.testing import SandboxHandle
from tests.app.support import clean_env
from tests.calls.support import call_spans, calls_project, number, outgoing_calls, set_call_knobs
from tests.factories import open_test_ledger
from tests.incli import in_process

N = 8
SENDERS = ("central-1", "central-2")


def _env(box: SandboxHandle, tmp_path: Path, ledger_url: str) -> dict[str, str]:
    return clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                     CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_RECEIVER_PORT="0",
                     CAMPAIGN_STATE_DIR=str(tmp_path / "state"))


def _rows(ledger_url: str) -> dict[str, dict[str, Any]]:
    """number → the delivery's state, sender, ended_at and details."""
    d = deliveries.c
    with open_test_ledger(ledger_url) as ledger, \
            access.read(ledger.engine, "read deliveries") as conn:
        found = conn.execute(select(d.to, d.state, d.sender, d.ended_at, d.details,
                                    d.message_id)).all()
    return {to: {"state": state, "sender": sender, "ended_at": ended,
                 "details": json.loads(details) if details else {}, "call_id": call_id}
            for to, state, sender, ended, details, call_id in found}


@pytest.mark.slow
def test_calls_to_a_list_go_one_at_a_time_per_session_with_their_outcomes(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    box = make_sandbox(seed=11)
    set_call_knobs(box, answer_rate=0.5, duplicate_rate=1.0, time_scale=0.08,
                   ring_s=[2.0, 8.0], talk_s=[3.0, 15.0])
    for sender in SENDERS:
        box.create_session(sender)
    root = tmp_path / "shop"
    path = calls_project(root, N, senders=SENDERS)
    env = _env(box, tmp_path, ledger_url)
    run = in_process(env, "run", str(path), cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "run 1: completed" in run.stdout, run.stdout

    # every recipient called once, through calls/stream with exactly the documented body
    sends = [s for s in box.sends() if s["path"].startswith("/api/v1/calls/")]
    assert Counter(s["to"] for s in sends) == Counter({number(i): 1 for i in range(N)})
    assert all(s["path"] == "/api/v1/calls/stream" and s["body"] == {
        "sessionId": s["sessionId"], "to": s["to"], "record": True} for s in sends)
    # one call at a time per session: each starts after the previous one's end
    spans = call_spans(box)
    assert set(spans) == set(SENDERS)
    for items in spans.values():
        assert len(items) >= 2
        for (_start, end, _id), (next_start, _e, _n) in pairwise(items):
            assert next_start >= end - timedelta(milliseconds=1), items

    # each call's outcome as the sandbox decided it, once, every event having come twice
    calls = {c["callId"]: c for c in outgoing_calls(box)}
    assert all(any(e.endswith("(repeat)") for e in c["events"]) for c in calls.values())
    rows = _rows(ledger_url)
    assert len(rows) == N
    answered = 0
    for to, row in rows.items():
        call = calls[row["call_id"]]
        details = row["details"]
        assert call["to"].startswith(to) and call["sessionId"] == row["sender"]
        assert row["ended_at"] is not None and details["callId"] == call["callId"]
        if call["answered"]:
            answered += 1
            assert row["state"] == "answered" and details["answered"] is True
            assert details["reason"] == "hangup"
            assert abs(details["durationMs"] - call["talkS"] * 1000) <= 1
            assert details["recordingUrl"] == \
                f"{box.base_url}/sandbox/calls/{call['callId']}/full.wav"
        else:  # never a recording, never a duration
            assert row["state"] == "not_answered" and details["answered"] is False
            assert details["reason"] == "no_answer"
            assert "recordingUrl" not in details and "durationMs" not in details
    assert 0 < answered < N

    status = json.loads(in_process(env, "status", "1", "--json", cwd=root).stdout)
    outcomes = status["outcomes"]
    assert (outcomes["answered"], outcomes["not_answered"], outcomes["in_progress"]) == \
        (answered, N - answered, 0)
    assert outcomes["recorded"] == outcomes["timed"] == answered
    talk = sum(c["talkS"] for c in calls.values() if c["answered"])
    assert abs(outcomes["talk_seconds"] - talk) < 0.1 + 0.001 * N
    assert status["outcome_lines"][0] == \
        f"WhatsApp calls: answered {answered} · not answered {N - answered} · in progress 0"

    report = in_process(env, "report", "1", "--format", "csv", "--output", str(tmp_path / "r.csv"),
                 cwd=root)
    assert report.returncode == 0, report.stdout + report.stderr
    with open(tmp_path / "r.csv", encoding="utf-8-sig", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == N
    for line in table:
        row = rows[line["Number"]] if "Number" in line else None
        assert row is not None, line.keys()
        call = calls[row["call_id"]]
        assert line["Answered"] == ("yes" if call["answered"] else "no")
        assert line["End reason"] == ("hangup" if call["answered"] else "no_answer")
        if call["answered"]:
            assert line["Recording"] == row["details"]["recordingUrl"]
            assert abs(float(line["Call length (s)"]) - call["talkS"]) < 0.01
        else:
            assert line["Recording"] == "" and line["Call length (s)"] == ""
