"""One definition of planned, sent and each rate (``scheduler.ledger.funnel``): the
Summary, the funnel PNG's labels and ``campaign status`` give the same numbers for a run."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger import funnel as fn
from scheduler.reports import write_report
from tests.factories import command_project
from tests.reports.support import Scenario


def test_rates_are_of_planned_then_of_sent() -> None:
    counts = {"planned": 17, "sent": 14, "delivered": 10, "read": 6, "replied": 3}
    assert [(r.label, r.value) for r in fn.rates("whatsapp", counts)] == [
        ("Sent (% of planned)", 14 / 17), ("Delivered (% of sent)", 10 / 14),
        ("Read (% of sent)", 6 / 14), ("Replied (% of sent)", 3 / 14)]  # fmt: skip
    assert fn.funnel_line("whatsapp", counts) == (
        "planned 17 · sent 14 (82.4%) · delivered 10 (71.4%) · read 6 (42.9%) · "
        "replied 3 (21.4%)")  # fmt: skip
    assert fn.labelled_shares("voice", [10, 8, 5, 2]) == [
        "", "80.0% of planned", "62.5% of dialed", "25.0% of dialed"]  # fmt: skip
    assert fn.rates("sms", {"planned": 0})[0].value is None  # nothing planned: no rate
    assert fn.planned({"read": 6, "skipped": 3, "failed": 1}) == 7


def test_status_gives_the_summarys_numbers(whatsapp_run: Scenario, ledger_url: str,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:  # fmt: skip
    report = write_report(whatsapp_run.ledger, [whatsapp_run.run_id], output=tmp_path / "out")
    summary = {row[0]: row[1] for row in openpyxl.load_workbook(report.path)["Summary"]
               .iter_rows(values_only=True) if row[0]}  # fmt: skip
    command_project(tmp_path, monkeypatch, ledger_url)
    runner = CliRunner()
    shown = runner.invoke(app, ["status", str(whatsapp_run.run_id), "--json"])
    assert shown.exit_code == 0, shown.output
    funnel = json.loads(shown.stdout)["funnel"]
    assert funnel["counts"] == {"planned": 17, "sent": 14, "delivered": 10, "read": 6,
                                "replied": 3, "skipped": 3}  # fmt: skip
    for stage in ("Planned", "Sent", "Delivered", "Read", "Replied"):
        assert summary[stage] == funnel["counts"][stage.lower()], stage
    for label, value in funnel["rates"].items():
        assert summary[label] == pytest.approx(value), label
    text = runner.invoke(app, ["status", str(whatsapp_run.run_id)])
    assert text.exit_code == 0, text.output
    assert "planned 17 · sent 14 (82.4%) · delivered 10 (71.4%)" in " ".join(text.stdout.split())
