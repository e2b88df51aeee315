"""SMS and voice campaigns run through the CLI against a sandbox service: what ``preview``
showed is what the service received, and ``status`` says what the service decided (the
sandbox's own outcomes, ``/sandbox/outcomes``)."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scheduler.service.account_models import cause_text
from tests.app.support import CAMPAIGN, clean_env
from tests.factories import REPO
from tests.incli import in_process


def _project(root: Path, example: str) -> Path:
    """A project with the example campaign ``example``, its window opened to the whole day
    (the test runs at any hour) and a quick pace."""
    for folder in ("campaigns", "data"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name in ("demo.csv", "optout.txt", "cobrancas.csv"):
        (root / "data" / name).write_bytes((REPO / "data" / name).read_bytes())
    text = (REPO / "campaigns" / f"{example}.toml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines()
             if not line.startswith(("window =", "days ="))]
    text = "\n".join(lines).replace('rate = "5/s"', 'rate = "200/s"').replace(
        'rate = "2/s"', 'rate = "200/s"')
    # the account's prices (the sandbox's): a bulk's answer says no cost, so the ledger
    # counts its recipients at these
    (root / "config.toml").write_text("sms_price_micro = { marketing = 60000, otp = 90000 }\n")
    path = root / "campaigns" / f"{example}.toml"
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _bodies(items: list[tuple[str, Any]]) -> Counter[str]:
    return Counter(json.dumps([path, body], sort_keys=True) for path, body in items)


@pytest.mark.slow
def test_an_sms_run_sends_the_previewed_bulks_and_status_says_what_the_service_decided(
        make_sandbox, tmp_path: Path) -> None:
    box = make_sandbox(sms_undelivered_rate=0.2, sms_failed_rate=0.1, sms_expired_rate=0.1,
                       sms_report_delay_ms=(0.0, 50.0))
    campaign = _project(tmp_path / "shop", "sms_aviso")
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key)
    preview = in_process(env, "preview", str(campaign), "--rows", "1000", "--json", cwd=tmp_path)
    assert preview.returncode == 0, preview.stderr
    shown = [(item["endpoint"], item["body"]) for item in json.loads(preview.stdout)]
    run = in_process(env, "run", str(campaign), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    sent = [(s["path"], s["body"]) for s in box.sends() if "/sms/" in s["path"]]
    assert _bodies(sent) == _bodies(shown)
    assert any(len(body["to"]) > 1 for path, body in shown if path.endswith("/sms/bulk"))

    status = in_process(env, "status", "--json", cwd=tmp_path / "shop")
    outcomes = json.loads(status.stdout)["outcomes"]
    decided = [o for o in box.outcomes("sms") if o["outcome"] != "skipped"]
    by_outcome = Counter(o["outcome"] for o in decided)
    assert outcomes["awaiting_report"] == 0, outcomes
    assert outcomes["delivered"] == by_outcome["delivered"]
    assert outcomes["by_report"] == {k: n for k, n in by_outcome.items() if k != "delivered"}
    assert outcomes["undelivered"] == len(decided) - by_outcome["delivered"]
    codes = Counter(o["errorCode"] or "no error code" for o in decided
                    if o["outcome"] != "delivered")
    assert outcomes["by_error_code"] == dict(codes)
    assert outcomes["segments"] == sum(o["segments"] for o in decided)
    assert outcomes["cost_micro_reais"] == sum(o["costMicroReais"] for o in decided)
    human = in_process(env, "status", cwd=tmp_path / "shop")
    assert f"SMS: delivered {by_outcome['delivered']}" in human.stdout
    assert "cost so far R$ " in human.stdout


def _settled(env: dict[str, str], shop: Path) -> dict[str, Any]:
    """The run's outcomes once no call lacks its end, with the project's receiver serving
    alone (``campaign receiver``) for the events the service retries after the run."""
    receiver = subprocess.Popen([*CAMPAIGN, "receiver"], env=env, cwd=shop,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            status = in_process(env, "status", "--json", cwd=shop)
            calls = json.loads(status.stdout)["outcomes"]
            if calls["no_outcome_yet"] == 0 and calls["in_progress"] == 0:
                return calls
            assert time.monotonic() < deadline, calls
            time.sleep(0.5)
    finally:
        receiver.terminate()
        receiver.wait(timeout=30)


@pytest.mark.slow
def test_a_voice_run_sends_the_previewed_bulks_and_status_says_how_each_call_went(
        make_sandbox, tmp_path: Path) -> None:
    # webhooks retried for about a minute: the events of calls still going when the run
    # ends reach the receiver started after it
    box = make_sandbox(webhook_retry_base_s=1.0)
    campaign = _project(tmp_path / "shop", "voice_lembrete")
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                    CAMPAIGN_REPORT_WAIT_S="5")
    preview = in_process(env, "preview", str(campaign), "--rows", "1000", "--json", cwd=tmp_path)
    assert preview.returncode == 0, preview.stderr
    items = json.loads(preview.stdout)
    shown = [(item["endpoint"], item["body"]) for item in items]
    run = in_process(env, "run", str(campaign), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    sent = [(s["path"], s["body"]) for s in box.sends() if "/voice/" in s["path"]]
    assert _bodies(sent) == _bodies(shown)
    assert all("recipients" in body and "to" not in body for _, body in shown)

    calls = _settled(env, tmp_path / "shop")
    decided = [o for o in box.outcomes("voice") if o["outcome"]]
    placed = sum(len(item["to"]) for item in items)
    assert len(decided) == placed
    by_outcome = Counter(o["outcome"] for o in decided)
    assert (calls["answered"], calls["not_answered"]) == (
        by_outcome["answered"], by_outcome["not_answered"])
    causes = Counter(cause_text(o["cause"], o["causeDescription"]) for o in decided
                     if o["outcome"] == "not_answered")
    assert calls["not_answered_causes"] == dict(causes)
    digits = Counter(o["digits"] for o in decided if o["digits"])
    assert calls["pressed_digits"] == sum(digits.values())
    top = dict(sorted(digits.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
    assert calls["top_digits"] == top
    assert calls["talk_seconds"] == sum(o["talkSeconds"] or 0 for o in decided)
    human = in_process(env, "status", cwd=tmp_path / "shop")
    assert f"calls: answered {by_outcome['answered']} · not answered" in human.stdout
