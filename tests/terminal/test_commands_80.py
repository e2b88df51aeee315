"""What the commands print at 80 columns: nothing cut, times in the campaign's zone with
its label, outside text escaped (Typer's runner, ``COLUMNS=80``)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.factories import REPO, T0, make_run, number
from tests.tracking.support import mid, sent

runner = CliRunner()
WELCOME = str(REPO / "campaigns" / "welcome.toml")


pytestmark = pytest.mark.usefixtures("terminal_80")


def _lines(*args: str) -> list[str]:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # a path is printed whole, for copying (the terminal wraps it); nothing else is longer
    assert max(len(line) for line in lines if not line.startswith("ledger: ")) <= 80, \
        result.stdout
    return lines


def test_preview_wraps_message_lines_instead_of_cutting_them() -> None:
    lines = _lines("preview", WELCOME, "--rows", "1")
    text = " ".join(line.strip("│ ") for line in lines)
    # the template's long line reaches the screen whole (it was cut at "você rec")
    assert "A partir de agora você recebe por aqui" in text
    assert "…" not in "\n".join(lines)


def test_plan_keeps_endpoint_and_last_send_in_the_campaigns_zone() -> None:
    lines = _lines("plan", WELCOME, "--start", "2026-11-23T09:00")
    shown = "\n".join(lines)
    assert "endpoint" in shown and "messages/send/image" in shown
    assert "last send" in shown and "2026-11-23 09:02 -03:00" in shown
    assert "start  2026-11-23 09:00 -03:00" in lines
    assert "finish 2026-11-23 09:12 -03:00 (≈ 12 min)" in lines
    assert "T09:" not in shown and "+00:00" not in shown


def test_plan_json_says_times_in_utc() -> None:
    result = runner.invoke(app, ["plan", WELCOME, "--start", "2026-11-23T09:00", "--json"])
    report = json.loads(result.stdout)
    assert report["timezone"] == "America/Sao_Paulo"
    assert report["start"] == "2026-11-23T12:00:00+00:00"
    assert report["finish"] == "2026-11-23T12:12:15+00:00"


def test_runs_and_status_say_the_campaigns_zone(ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    runs = "\n".join(_lines("runs"))
    assert "created (campaign's zone)" in runs and "2026-11-23 09:00 -03:00" in runs
    status = _lines("status", str(run_id))
    assert "created 2026-11-23 09:00 -03:00 · not started yet" in status
    as_json = json.loads(runner.invoke(app, ["runs", "--json"]).stdout)["runs"][0]
    assert as_json["created_at"] == "2026-11-23T12:00:00+00:00"
    assert as_json["timezone"] == "America/Sao_Paulo"


def test_events_escape_control_characters_and_label_their_zone(ledger: Ledger) -> None:
    make_run(ledger, 1)
    event = sent(number(0), mid(0), session="loja\x1b[2J\x1b[31m-01")
    store_and_apply(TrackingStore(ledger), [incoming_from(event, json.dumps(event), T0)],
                    ApplyContext(OptOutWords(["SAIR"])), T0)
    lines = _lines("events")  # none wider than 80 columns
    shown = "\n".join(lines)
    assert "\x1b" not in shown
    assert "loja\\x1b[2J\\x1b[31m-01" in shown
    assert "2026-11-23 09:00:00 -03:00  messages.sent" in shown
    # what did not fit goes whole on an indented second line: sender, number, message id
    assert len(lines) == 2 and lines[1].startswith("   loja"), lines
    assert lines[1].endswith(f"{number(0)}  {mid(0).lower()}  unmatched"), lines
    assert not runner.invoke(app, ["events"], env={"COLUMNS": "200"}).stdout.strip().count("\n")
    as_json = runner.invoke(app, ["events", "--json"]).stdout
    assert "\x1b" not in as_json and json.loads(as_json)["session_id"].startswith("loja\x1b")
