"""Duplicated and reordered account events change nothing: with the sandbox posting some
``sms.*`` / ``call.*`` events twice and holding others back so that later ones overtake
them, the ledger ends as the sandbox decided and stores each event once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.channels.support import (
    check_sms_outcomes,
    check_voice_outcomes,
    ledger_rows,
    run_env,
    sms_project,
    stored_events,
    voice_project,
)
from tests.incli import in_process

#: Half the events posted twice; half held back until the next one overtakes them (or 0.25 s).
FAULTS: dict[str, Any] = {"webhook_duplicate_rate": 0.5, "webhook_reorder": True,
                          "webhook_reorder_hold_ms": 250.0}


def _posted(box: Any, channel: str) -> Counter[str]:
    """Events the receiver took (2xx), by name, duplicates included."""
    return Counter(w["event"] for w in box.webhooks()
                   if w["channel"] == channel and w["status"] is not None
                   and 200 <= w["status"] < 300)


def _stored(ledger_url: str) -> tuple[Counter[tuple[str, str]], list[tuple[str, str, dict]]]:
    """Stored events counted by (name, message id), and in arrival order with their data."""
    found = [(name, norm or "", json.loads(payload)) for name, norm, payload
             in stored_events(ledger_url)]
    return Counter((name, norm) for name, norm, _ in found), found


def test_repeated_and_reordered_sms_reports_change_nothing(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    box = make_sandbox(sms_undelivered_rate=0.2, sms_failed_rate=0.1, sms_expired_rate=0.1,
                       sms_report_delay_ms=(0.0, 20.0), **FAULTS)
    shop = tmp_path / "shop"
    campaign = sms_project(shop, 200, batch=40)
    run = in_process(run_env(box.base_url, box.api_key, ledger_url), "run", str(campaign), cwd=shop)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "run 1: completed" in run.stdout, run.stdout

    decided = box.outcomes("sms")
    check_sms_outcomes(ledger_rows(ledger_url), decided)
    counted, _ = _stored(ledger_url)
    assert counted == Counter({(f"sms.{o['outcome']}", o["messageId"].lower()): 1
                               for o in decided})  # each report stored once
    assert sum(_posted(box, "sms").values()) > len(decided)  # some came twice


def test_repeated_and_reordered_call_events_change_nothing(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    box = make_sandbox(voice_answer_rate=0.5, voice_digits="12", **FAULTS)
    shop = tmp_path / "shop"
    # two calls at a time: the event that overtakes a held one is mostly of the same call
    campaign = voice_project(shop, 12, batch=2, max_calls=2)
    run = in_process(run_env(box.base_url, box.api_key, ledger_url), "run", str(campaign), cwd=shop)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "run 1: completed" in run.stdout, run.stdout

    calls = box.outcomes("voice")
    rows = ledger_rows(ledger_url)
    check_voice_outcomes(rows, calls)
    counted, arrived = _stored(ledger_url)
    expected: Counter[tuple[str, str]] = Counter()
    for call in calls:  # the events each call made, each stored once
        norm = (rows[call["to"]].message_id or "").lower()
        expected[("call.started", norm)] += call["attempts"]
        expected[("call.answered", norm)] += 1 if call["answered"] else 0
        expected[("call.dtmf", norm)] += len(call["digits"] or "")
        expected[("call.ended", norm)] += 1
    assert counted == +expected
    assert sum(_posted(box, "voice").values()) > sum(expected.values())  # some came twice
    # and some came out of order: a call's event stored after a later one of the same call
    latest: dict[str, str] = {}
    overtaken = 0
    for _name, norm, envelope in arrived:
        stamp = envelope["data"]["timestamp"]
        overtaken += stamp < latest.get(norm, "")
        latest[norm] = max(stamp, latest.get(norm, ""))
    assert overtaken > 0
