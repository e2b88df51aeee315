"""``campaign plan`` and ``preview`` of SMS and voice campaigns: what a user reads before
sending (segments, estimated cost, bulk requests, calls in progress, the bodies sent)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.service.account_models import SmsBulkBody, SmsSendBody, VoiceBulkBody
from tests.factories import REPO, Project
from tests.incli import campaign

runner = CliRunner()
SMS = REPO / "campaigns" / "sms_aviso.toml"
VOICE = REPO / "campaigns" / "voice_lembrete.toml"
START = "2026-11-23T09:00:00-03:00"
SMS_BULK, SMS_SEND, VOICE_BULK = ("/api/v1/sms/bulk", "/api/v1/sms/send",
                                  "/api/v1/voice/bulk")


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No service, default prices: an empty settings file (tests write into it)."""
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    monkeypatch.delenv("CAMPAIGN_API_KEY", raising=False)
    config = tmp_path / "settings.toml"
    config.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(config))
    return config


def _plan(path: Path, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", str(path), "--start", START, "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _preview(path: Path, rows: int = 10_000) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["preview", str(path), "--rows", str(rows), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_sms_example_plan_counts_segments_cost_and_the_requests_preview_shows() -> None:
    report = _plan(SMS)
    totals = report["channel_totals"]
    assert totals["channel"] == "sms" and totals["deliveries"] == report["steps"][0]["planned"]
    sms = totals["sms"]
    # the segments are those validate counts, every message of the example is marketing,
    # priced at the settings' default 50,000 micro-reais a segment
    assert sms["segments"] == report["sms_segments"] == sms["segments_by_route"]["marketing"]
    assert sum(sms["encodings"].values()) == totals["deliveries"]
    assert sms["estimated_cost_micro_reais"] == sms["segments"] * 50_000
    # the requests counted are the ones the channel builds: one per preview item
    items = _preview(SMS)
    by_path: dict[str, int] = {}
    for item in items:
        by_path[item["endpoint"]] = by_path.get(item["endpoint"], 0) + 1
    assert totals["requests"] == {"total": len(items), **by_path}
    assert by_path[SMS_BULK] > 0 and by_path[SMS_SEND] > 0  # equal texts do share requests
    numbers = [n for item in items for n in item["to"]]
    assert len(numbers) == len(set(numbers)) == totals["deliveries"]


def test_the_estimated_cost_uses_the_price_in_the_settings(_settings: Path) -> None:
    base = _plan(SMS)["channel_totals"]["sms"]
    _settings.write_text("sms_price_micro = { marketing = 80000, otp = 90000 }\n")
    priced = _plan(SMS)["channel_totals"]["sms"]
    assert priced["estimated_cost_micro_reais"] == base["segments"] * 80_000
    assert priced["price_per_segment_micro_reais"] == {"marketing": 80_000, "otp": 90_000}


def _sms_project(project: Project, recipients: int, text: str, batch: int | None) -> Path:
    project.write("data/r.csv", "nome;telefone\n" + "".join(
        f"n{i};119{i:08d}\n" for i in range(recipients)))
    pace = '[pace]\nrate = "50/s"\n' + (f"batch = {batch}\n" if batch else "")
    return project.campaign(
        'name = "s"\nchannel = "sms"\n[recipients]\nfile = "data/r.csv"\n'
        f'phone_column = "telefone"\n{pace}[[steps]]\ntext = "{text}"\n')


def test_one_text_for_everyone_goes_out_in_full_bulks(project: Project) -> None:
    path = _sms_project(project, 250, "Promo de hoje: 20% off", batch=100)
    totals = _plan(path)["channel_totals"]
    assert totals["requests"] == {"total": 3, SMS_BULK: 3} and totals["largest_request"] == 100
    items = _preview(path)
    assert [len(item["to"]) for item in items] == [100, 100, 50]
    for item in items:
        assert SmsBulkBody.model_validate(item["body"]).to == item["to"]
        assert "sessionId" not in item["body"]


def test_a_text_of_its_own_goes_to_sms_send(project: Project) -> None:
    path = _sms_project(project, 3, "Oi {{ nome }}", batch=None)
    totals = _plan(path)["channel_totals"]
    assert totals["requests"] == {"total": 3, SMS_SEND: 3}
    for item in _preview(path):
        body = SmsSendBody.model_validate(item["body"])
        assert item["endpoint"] == SMS_SEND and [body.to] == item["to"]


def test_voice_preview_shows_the_bulk_body_with_each_recipients_variables() -> None:
    items = _preview(VOICE, rows=12)
    assert [len(item["to"]) for item in items] == [10, 2]  # the channel's default batch
    for item in items:
        assert item["endpoint"] == VOICE_BULK and "to" not in item["body"]
        body = VoiceBulkBody.model_validate(item["body"])
        assert body.flowId == "flow-cobranca" and body.numbers is None
        assert [r.phone for r in body.recipients or []] == item["to"]
        assert all(r.variables and set(r.variables) == {"nome", "valor", "vencimento"}
                   for r in body.recipients or [])


def _seconds(report: dict[str, Any]) -> float:
    start = datetime.fromisoformat(report["start"])
    return (datetime.fromisoformat(report["finish"]) - start).total_seconds()


def test_voice_plan_counts_bulks_and_calls_in_progress(project: Project, _settings: Path
                                                        ) -> None:
    report = _plan(VOICE)
    totals = report["channel_totals"]
    assert totals["requests"] == {"total": 3, VOICE_BULK: 3}
    # a call's length is the settings' voice_call_estimate_s (90 s unless set)
    assert totals["voice"]["call_seconds_assumed"] == 90
    # 24 calls at 2/s fit in the account's 30 calls at once: the pace sets the start of the
    # last call, and it ends a call's length later
    assert report["limited_by"] == "pace" and 90 < _seconds(report) < 90 + 12
    # two calls at once, each lasting 60 s: the 12th pair starts 11 minutes after the first
    _settings.write_text("voice_call_estimate_s = 60\n")
    limited = project.write("campaigns/v.toml", VOICE.read_text().replace(
        '[pace]\nrate = "2/s"', '[pace]\nrate = "2/s"\nmax_calls = 2').replace(
        'window = "09:00-19:00"', 'window = "09:00-23:00"').replace(
        'file = "data/cobrancas.csv"', f'file = "{REPO / "data" / "cobrancas.csv"}"'))
    slow = _plan(limited)
    assert slow["limited_by"] == "calls in progress"
    assert slow["channel_totals"]["voice"]["max_calls"] == 2
    assert _seconds(slow) == pytest.approx(11 * 60 + 60, abs=2)
    longer = _plan(limited, "--call-seconds", "120")
    assert _seconds(longer) == pytest.approx(11 * 120 + 120, abs=2)


@pytest.mark.parametrize("name", ["sms_aviso", "voice_lembrete", "welcome"])
def test_plan_fits_80_columns_with_nothing_cut(name: str, _settings: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(COLUMNS="80", CAMPAIGN_CONFIG=str(_settings))
    done = campaign("plan", str(REPO / "campaigns" / f"{name}.toml"), "--start", START,
                    env=env)  # the console script, in this process (COLUMNS read per command)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert "…" not in done.stdout and "finish 2026-11-23 " in done.stdout
    if name == "sms_aviso":
        assert "an estimate" in done.stdout and "sms_price_micro" in done.stdout
        assert "to sms/bulk" in done.stdout and "to sms/send" in done.stdout
    if name == "voice_lembrete":
        assert "90 s assumed" in done.stdout and "voice_call_estimate_s" in done.stdout
        assert "to voice/bulk" in done.stdout
