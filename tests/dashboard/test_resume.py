"""Resume from the dashboard: a paused run that no process holds is continued by a
``campaign resume`` the dashboard starts, detached, logging under the state folder."""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

import pytest

from tests.app.support import wait_for
from tests.dashboard.web_support import form_token, hooks, project_settings, served
from tests.factories import make_run, open_test_ledger


def test_resume_starts_a_campaign_resume_that_finishes_the_run(
        ledger_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CAMPAIGN_BASE_URL", "CAMPAIGN_API_KEY", "CAMPAIGN_CONFIG"):
        monkeypatch.delenv(name, raising=False)  # the child sends to the embedded sandbox
    settings = project_settings(tmp_path, ledger_url)
    with open_test_ledger(ledger_url) as ledger:  # the real clock, as the child's
        run = make_run(ledger, 3)
        ledger.request(run, "pause")
        try:
            with served(ledger, settings) as web:
                page = web.get(f"/runs/{run}").text
                assert "resume-button" in hooks(page, "id")
                done = web.post(f"/runs/{run}/resume", data={"csrf_token": form_token(page)})
                assert done.status_code == 303
                notice = hooks(web.get(done.headers["location"]).text, "id")["notice"]
            assert f"`campaign resume {run}` continues it in process" in notice
            wait_for(lambda: ledger.get_run(run).status == "completed", timeout=120)
        finally:
            pid = ledger.get_run(run).owner_pid
            if pid and pid != os.getpid():
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        counts = ledger.counts(run)
    assert counts.get("planned", 0) == 0 and sum(counts.values()) == 3
    logs = list((tmp_path / "state" / "logs").glob(f"resume-run-{run}-*.log"))
    assert len(logs) == 1 and str(logs[0]) in notice


def test_resume_of_a_finished_run_is_refused_and_starts_nothing(
        ledger_url: str, tmp_path: Path) -> None:
    settings = project_settings(tmp_path, ledger_url)
    with open_test_ledger(ledger_url) as ledger:
        run, other = make_run(ledger, 2), make_run(ledger, 2)
        ledger.set_status(run, "completed")
        with served(ledger, settings) as web:
            token = form_token(web.get(f"/runs/{other}").text)  # the session's token
            refused = web.post(f"/runs/{run}/resume", data={"csrf_token": token})
    assert refused.status_code == 409
    assert f"run {run} is already completed" in hooks(refused.text, "id")["error-message"]
    assert not (tmp_path / "state" / "logs").exists() or not list(
        (tmp_path / "state" / "logs").iterdir())
