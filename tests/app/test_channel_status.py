"""Each channel's own outcomes in ``campaign status``, ``runs`` and the progress bar.

The runs here are stored and moved by the ledger's own code: the plan writer, the engine's
claim and settlement (:meth:`scheduler.ledger.queue_store.QueueStore.write`, which records the SMS
segments and cost the answer gave) and the receiver's store-and-apply of the service's
events, repeated and out of order as the service sends them.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger import access
from scheduler.ledger.changes import Changes
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.service.account_models import voice_key
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from scheduler.usecases.foreground import RunProgress
from scheduler.views.channel_status import SmsOutcomes, VoiceOutcomes, channel_outcomes
from scheduler.wiring import run_store
from tests.factories import T0, command_project, number
from tests.tracking.support import sms, voice

CTX = ApplyContext(OptOutWords(["SAIR"]))
SMS_PATH = "/api/v1/sms/bulk"
VOICE_PATH = "/api/v1/voice/bulk"


def _run(ledger: Ledger, channel: str, n: int) -> int:
    """A stored run of ``n`` recipients on ``channel``."""
    run_id = ledger.create_run(
        campaign_name=f"c-{channel}", channel=channel, definition_path="c.toml",
        definition={"name": f"c-{channel}", "senders": ["account"], "pace": {"rate": "10/s"},
                    "schedule": {"timezone": "America/Sao_Paulo"}, "steps": [{}]},
        delivery_mode="at-most-once", timezone="America/Sao_Paulo")
    payload = ({"text": "Olá, sua fatura vence amanhã", "route": "marketing"}
               if channel == "sms" else {"flowId": "flow-1", "variables": {"nome": "Ana"}})
    rows = [{"row": i + 1, "to": number(i), "step": 0, "kind": channel,
             "path": SMS_PATH if channel == "sms" else VOICE_PATH, "payload": payload,
             "variables": {}, "region": "BR", "state": "planned", "reason": None}
            for i in range(n)]
    ledger.store_plan(run_id, [rows], start_at=T0)
    return run_id


def _accept(ledger: Ledger, run_id: int, ids: list[str],
            details: list[dict[str, Any] | None]) -> None:
    """The engine's claim, then its settlement of the service's answers."""
    with access.read(ledger.engine) as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=len(ids))
    with access.transaction(ledger.engine) as conn:
        dq.claim(conn, [(row.id, "account") for row in due], T0)
    settled = Changes(
        accepted=[(row.id, mid) for row, mid in zip(due, ids, strict=True)],
        details=[(row.id, d) for row, d in zip(due, details, strict=True) if d])
    run_store(ledger, run_id).queue.write([(settled, T0)])


def _ingest(ledger: Ledger, events: list[dict[str, Any]]) -> None:
    for event in events:
        store_and_apply(TrackingStore(ledger),
                        [incoming_from(event, json.dumps(event), T0)], CTX, T0)


def _sms_run(ledger: Ledger) -> int:
    """Eight SMS: 3 delivered, 2 undelivered (NO_COVERAGE), 1 failed (BLACKLIST), 1 expired,
    1 with no report yet; the service counted message 0 in 3 segments, not our 2."""
    run_id = _run(ledger, "sms", 8)
    ids = [f"sms_{i:04x}" for i in range(8)]
    _accept(ledger, run_id, ids, [{"segments": 2, "encoding": "UCS-2",
                                   "costMicroReais": 100_000} for _ in ids])
    reports = [
        sms("sms.delivered", ids[0], number(0), segments=3),
        sms("sms.delivered", ids[1], number(1), segments=2),
        sms("sms.delivered", ids[2], number(2), segments=2),
        sms("sms.undelivered", ids[3], number(3), errorCode="NO_COVERAGE", segments=2),
        sms("sms.undelivered", ids[4], number(4), errorCode="NO_COVERAGE", segments=2),
        sms("sms.failed", ids[5], number(5), errorCode="BLACKLIST", segments=2),
        sms("sms.expired", ids[6], number(6), segments=2),
    ]
    stream = reports + reports[3:]  # the service repeats reports
    random.Random(4).shuffle(stream)
    _ingest(ledger, stream)
    return run_id


def test_sms_status_counts_each_report_and_code_once_with_segments_and_cost(
        ledger: Ledger) -> None:
    run_id = _sms_run(ledger)
    found = channel_outcomes(ledger, run_id, "sms")
    assert isinstance(found, SmsOutcomes)
    assert (found.delivered, found.undelivered, found.awaiting_report) == (3, 4, 1)
    assert found.by_report == {"undelivered": 2, "expired": 1, "failed": 1}
    assert found.by_error_code == {"NO_COVERAGE": 2, "BLACKLIST": 1, "no error code": 1}
    # the service's count wins (3 for message 0), the cost is what the answers said
    assert (found.segments, found.cost_micro_reais, found.recounted) == (17, 800_000, 1)
    lines = found.lines()
    assert lines[0] == "SMS: delivered 3 · undelivered 4 · awaiting a report 1"
    assert "undelivered by report: undelivered 2, expired 1, failed 1" in lines[1]
    assert any("segments 17 · cost so far R$ 0.80" in line for line in lines)


def _voice_run(ledger: Ledger) -> int:
    """Five calls: 2 answered (digits "12" and "1"), 2 not answered (busy, no answer), 1
    still ringing."""
    run_id = _run(ledger, "voice", 5)
    keys = [voice_key("20261123", number(i)) or "" for i in range(5)]
    _accept(ledger, run_id, keys, [{"bulkId": "20261123"} for _ in keys])

    def call(name: str, i: int, seconds: int, **data: Any) -> dict[str, Any]:
        event = voice(name, f"call-{i}", number(i), T0 + timedelta(seconds=seconds), **data)
        event["data"]["bulkCallId"] = "20261123"
        return event

    events = [
        call("call.started", 0, 1), call("call.answered", 0, 5, answered=True),
        call("call.dtmf", 0, 8, digits="1"), call("call.dtmf", 0, 9, digits="2"),
        call("call.ended", 0, 30, answered=True, talkSeconds=25, cause=16),
        call("call.started", 1, 1), call("call.dtmf", 1, 7, digits="1"),
        call("call.ended", 1, 20, answered=True, talkSeconds=15, cause=16),
        call("call.started", 2, 1), call("call.ended", 2, 9, answered=False, cause=17),
        call("call.started", 3, 1),
        call("call.ended", 3, 40, answered=False, cause=19, causeDescription="NO_ANSWER"),
        call("call.started", 4, 2),
    ]
    stream = events + events[:5]  # call.ended (and more) delivered twice
    random.Random(9).shuffle(stream)
    _ingest(ledger, stream)
    return run_id


def test_voice_status_counts_answers_causes_and_digits(ledger: Ledger) -> None:
    run_id = _voice_run(ledger)
    found = channel_outcomes(ledger, run_id, "voice")
    assert isinstance(found, VoiceOutcomes)
    assert (found.answered, found.not_answered, found.no_outcome_yet) == (2, 2, 1)
    assert found.in_progress == 1  # call 4 rings: started, never ended
    assert found.not_answered_causes == {"busy": 1, "no answer": 1}
    assert (found.pressed_digits, found.top_digits) == (2, {"1": 1, "12": 1})
    assert found.talk_seconds == 40
    assert found.lines()[:2] == ["calls: answered 2 · not answered 2 · no outcome yet 1",
                                 "  in progress (no call.ended yet) 1"]


def test_a_whatsapp_run_has_no_channel_outcomes_of_its_own(ledger: Ledger) -> None:
    run_id = _run(ledger, "whatsapp", 2)
    assert channel_outcomes(ledger, run_id, "whatsapp") is None


@pytest.fixture
def project_ledger(tmp_path, monkeypatch: pytest.MonkeyPatch, ledger_url: str) -> Ledger:
    """A project whose settings name the test's ledger, for the commands."""
    command_project(tmp_path, monkeypatch, ledger_url)
    from tests.factories import open_test_ledger

    with open_test_ledger(ledger_url) as ledger:
        yield ledger


def test_status_and_runs_show_each_channels_outcomes(project_ledger: Ledger) -> None:
    sms_run, voice_run = _sms_run(project_ledger), _voice_run(project_ledger)
    runner = CliRunner()
    status = runner.invoke(app, ["status", str(sms_run)])
    assert status.exit_code == 0, status.output
    assert "SMS: delivered 3 · undelivered 4 · awaiting a report 1" in status.stdout
    assert "error codes: NO_COVERAGE 2, BLACKLIST 1, no error code 1" in status.stdout
    calls = runner.invoke(app, ["status", str(voice_run), "--json"])
    row = json.loads(calls.stdout)
    assert row["outcomes"]["answered"] == 2 and row["outcomes"]["top_digits"] == {
        "1": 1, "12": 1}
    runs = runner.invoke(app, ["runs"])
    assert runs.exit_code == 0, runs.output
    assert f"run {sms_run} (sms): 3 delivered · 4 undelivered" in runs.stdout
    assert f"run {voice_run} (voice): 2 answered · 2 not answered" in runs.stdout
    table = runs.stdout.splitlines()[1:]  # below the ledger's path
    assert max(len(line) for line in table) <= 80


def test_the_progress_bar_shows_the_channels_outcomes_below_it(ledger: Ledger) -> None:
    run_id = _sms_run(ledger)
    console = Console(record=True, width=80, force_terminal=False)
    asked: list[dict[str, int]] = []

    def read(counts: dict[str, int]) -> Any:
        asked.append(counts)
        return channel_outcomes(ledger, run_id, "sms", counts)

    bar = RunProgress(console, 8, 0, channel="sms", outcomes=read)
    counts = ledger.counts(run_id)
    bar.update(counts)
    bar.update(counts)  # within OUTCOMES_EVERY_S: the ledger is not asked again
    assert len(asked) == 1
    console.print(bar.progress)
    shown = console.export_text()
    assert "sms: 3 delivered · 4 undelivered · 17 segments · R$ 0.80 so far" in shown
    bar.update(counts, final=True)
    assert len(asked) == 2
