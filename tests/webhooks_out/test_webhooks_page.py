"""The dashboard's outgoing webhooks page and ``campaign webhooks``: the same counts, no
secret and no URL query shown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger.outbox_store import OutboxStore
from scheduler.ledger.runs import Ledger
from scheduler.webhooks_out.worker import WebhookWorker
from tests.dashboard.web_support import hooks, project_settings, served
from tests.factories import FakeClock, command_project, make_run
from tests.incli import campaign
from tests.webhooks_out.support import SECRET

CONFIG = f"""
[[webhooks]]
name = "crm"
url = "http://127.0.0.1:9/hook?token=sekrit-query"
events = ["run.started", "run.paused"]
secret = "{SECRET}"
"""


def _fail_twice(ledger: Ledger, clock: FakeClock, settings: object) -> None:
    """Two events whose first try failed (nothing listens on port 9)."""
    run_id = make_run(ledger, 1)
    ledger.set_status(run_id, "running")
    ledger.request(run_id, "pause")
    worker = WebhookWorker(OutboxStore(ledger.engine), settings.webhooks,  # type: ignore[attr-defined]
                           settings.webhook_delivery, clock=clock)  # type: ignore[attr-defined]

    async def once() -> None:
        async with worker.client() as client:
            await worker.deliver_due(client)
    asyncio.run(once())


def test_the_page_shows_each_subscriptions_deliveries(tmp_path: Path, ledger: Ledger,
                                                      ledger_url: str,
                                                      clock: FakeClock) -> None:
    settings = project_settings(tmp_path, ledger_url, CONFIG)
    _fail_twice(ledger, clock, settings)
    with served(ledger, settings, clock=clock) as http:
        page = http.get("/webhooks")
        failing = http.get("/webhooks", params={"state": "delivered"})
    assert page.status_code == 200
    assert "sekrit" not in page.text and SECRET not in page.text
    assert hooks(page.text, "data-state").get("failing") is not None
    assert page.text.count('data-delivery="') == 2 and 'href="/webhooks"' in page.text
    assert failing.text.count('data-delivery="') == 0


def test_the_command_shows_the_same_counts_as_json(tmp_path: Path, ledger: Ledger,
                                                   ledger_url: str, clock: FakeClock,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    command_project(tmp_path, monkeypatch, ledger_url)
    (tmp_path / "config.toml").write_text(CONFIG)
    settings = project_settings(tmp_path, ledger_url, CONFIG)
    _fail_twice(ledger, clock, settings)
    out = CliRunner().invoke(app, ["webhooks", "--json"])
    assert out.exit_code == 0, out.output
    view = json.loads(out.output)
    assert view["subscriptions"] == [{
        "name": "crm", "url": "http://127.0.0.1:9/hook", "events": ["run.started",
                                                                    "run.paused"],
        "configured": True, "counts": {"pending": 0, "failing": 2, "delivered": 0,
                                       "failed": 0}}]
    assert [d["type"] for d in view["deliveries"]] == ["run.paused", "run.started"]
    assert all("cannot connect" in d["last_error"] for d in view["deliveries"])
    text = CliRunner().invoke(app, ["webhooks", "--state", "failing"])
    assert text.exit_code == 0 and "crm" in text.output and "sekrit" not in text.output
    assert SECRET not in text.output
    retried = CliRunner().invoke(app, ["webhooks", "retry", str(view["deliveries"][0]["id"])])
    assert retried.exit_code == 0 and "due now" in retried.output
    missing = campaign("webhooks", "retry", "999999")
    assert missing.returncode == 1 and "no delivery 999999" in missing.stderr
    wrong = campaign("webhooks", "--state", "late")
    assert wrong.returncode == 1 and "not a delivery state" in wrong.stderr


def test_the_command_reads_whole_at_80_columns(tmp_path: Path, ledger: Ledger,
                                               ledger_url: str, clock: FakeClock,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Each delivery's type, state, error and next try are whole on an 80-column terminal,
    and the subscription's name and URL too (nothing cut with an ellipsis)."""
    config = CONFIG.replace('"crm"', '"crm-principal-de-producao"').replace(
        "/hook?", "/hooks/campaigns/production?")
    command_project(tmp_path, monkeypatch, ledger_url)
    (tmp_path / "config.toml").write_text(config)
    _fail_twice(ledger, clock, project_settings(tmp_path, ledger_url, config))
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["webhooks"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()[1:]  # the ledger's path, first, is never cut
    assert "…" not in out.output and max(map(len, lines)) <= 80
    flat = " ".join(out.output.replace("│", " ").split())
    for words in ("crm-principal-de-producao", "run.paused", "run.started",
                  "cannot connect (refused or unreachable)", "failing"):
        assert words in flat, words
    assert "http://127.0.0.1:9/hooks/campaigns/production" in "".join(flat.split())
    assert "sekrit" not in out.output and SECRET not in out.output
