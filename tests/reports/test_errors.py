"""Errors of ``write_report`` and of ``campaign report``: one clear line, no partial file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scheduler.cli import app, main
from scheduler.core.errors import SchedulerError
from scheduler.reports import api, campaign_runs, write_report
from scheduler.reports.exceptions import (
    CampaignNotFound,
    NothingToReport,
    OutputNotWritable,
    ReportFormatError,
    RunsNotFound,
)
from tests.reports.support import Scenario

#: The console script's entry point, run as a process (``campaign = "scheduler.cli:main"``).
CAMPAIGN = [sys.executable, "-c", "from scheduler.cli import main; main()"]
runner = CliRunner()


@pytest.fixture
def cli_env(whatsapp_run: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> dict[str, str]:  # fmt: skip
    """Settings pointing at the scenario's ledger, with reports under tmp_path/reports."""
    url = whatsapp_run.ledger.engine.url.render_as_string(hide_password=False)
    env = {
        "CAMPAIGN_DATABASE_URL": url,
        "CAMPAIGN_REPORTS_DIR": str(tmp_path / "reports"),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def test_unknown_runs_and_campaign(whatsapp_run: Scenario, tmp_path: Path) -> None:
    with pytest.raises(RunsNotFound, match=r"^runs 98, 99 not found in the ledger"):
        write_report(whatsapp_run.ledger, [99, whatsapp_run.run_id, 98], output=tmp_path)
    with pytest.raises(CampaignNotFound, match="'nope' has no runs"):
        campaign_runs(whatsapp_run.ledger, "nope")
    assert campaign_runs(whatsapp_run.ledger, "promo") == [whatsapp_run.run_id]
    with pytest.raises(NothingToReport):
        write_report(whatsapp_run.ledger, [], output=tmp_path)
    with pytest.raises(ReportFormatError, match="use xlsx or csv"):
        write_report(whatsapp_run.ledger, [whatsapp_run.run_id], fmt="pdf", output=tmp_path)
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith("ledger.db")]


@pytest.mark.parametrize("fmt", ["xlsx", "csv"])
def test_unwritable_output(whatsapp_run: Scenario, tmp_path: Path, fmt: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(OutputNotWritable, match="not a folder") as caught:
        write_report(
            whatsapp_run.ledger, [whatsapp_run.run_id], fmt=fmt, output=blocker / f"r.{fmt}"
        )
    assert isinstance(caught.value, SchedulerError) and "\n" not in str(caught.value)
    taken = tmp_path / "out" / f"promo-run-{whatsapp_run.run_id}.{fmt}"
    taken.mkdir(parents=True)
    with pytest.raises(OutputNotWritable, match="it is a folder"):
        write_report(whatsapp_run.ledger, [whatsapp_run.run_id], fmt=fmt, output=taken.parent)
    assert [p.name for p in taken.parent.iterdir()] == [taken.name]


def test_a_failure_midway_leaves_no_file(
    whatsapp_run: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"

    def broken(*_args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(api.charts, "funnel_png", broken)
    with pytest.raises(OutputNotWritable, match="No space left on device"):
        write_report(whatsapp_run.ledger, [whatsapp_run.run_id], output=out)
    assert list(out.iterdir()) == []
    monkeypatch.undo()
    previous = out / "keep.xlsx"
    previous.write_bytes(b"an older report")
    monkeypatch.setattr(api, "splice", lambda *_a: (_ for _ in ()).throw(OSError(5, "I/O")))
    with pytest.raises(OutputNotWritable):
        write_report(whatsapp_run.ledger, [whatsapp_run.run_id], output=previous)
    assert sorted(p.name for p in out.iterdir()) == ["keep.xlsx"]
    assert previous.read_bytes() == b"an older report"


def test_cli_writes_the_report(
    cli_env: dict[str, str], whatsapp_run: Scenario, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["report", str(whatsapp_run.run_id)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "reports" / f"promo-run-{whatsapp_run.run_id}.xlsx"
    assert path.is_file() and str(path) in result.output.replace("\n", "")
    assert "20 recipients, 3 replies, 2 opt-outs" in result.output
    result = runner.invoke(app, ["report", "--campaign", "promo", "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "x.csv").read_bytes().startswith(b"\xef\xbb\xbf")


def test_cli_error_in_the_console_script_is_one_line(cli_env: dict[str, str]) -> None:
    done = subprocess.run(
        [*CAMPAIGN, "report", "99"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **cli_env, "COLUMNS": "400"},
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == "error: run 99 not found in the ledger (see `campaign runs`)\n"


@pytest.mark.parametrize(("args", "message"), [
    (["report", "1", "-o", "{blocker}/r.xlsx"], "error: cannot write the report in"),
    (["report", "--campaign", "nope"], "error: campaign 'nope' has no runs"),
    (["report"], "error: nothing to report"),
    (["report", "1", "--format", "ods"], "error: unknown report format 'ods'"),
])  # fmt: skip
def test_cli_errors_are_one_line(cli_env: dict[str, str], tmp_path: Path, args: list[str],
                                 message: str, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setattr(sys, "argv", ["campaign", *(a.replace("{blocker}", str(blocker))
                                                    for a in args)])  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())
