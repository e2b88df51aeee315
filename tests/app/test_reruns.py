"""Re-running a finished campaign, and continuing an edited one: never silently."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from scheduler.campaign.fingerprint import load_fingerprint
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from tests.app.support import CAMPAIGN, clean_env, text_sends, wait_for
from tests.factories import write_project
from tests.incli import in_process


def _service_env(service, **extra: str) -> dict[str, str]:
    return clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                     CAMPAIGN_VERIFY_GRACE_S="1", **extra)


def _add_rows(campaign: Path, rows: list[str]) -> None:
    csv = campaign.parent.parent / "data" / "lote.csv"
    csv.write_text(csv.read_text(encoding="utf-8") + "\n".join(rows) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_a_finished_one_off_campaign_is_not_sent_again_by_accident(make_sandbox, tmp_path
                                                                   ) -> None:
    service = make_sandbox()
    service.create_session("s1")
    campaign = write_project(tmp_path / "shop", 6)
    env = _service_env(service)
    cwd = tmp_path / "shop"
    assert in_process(env, "run", str(campaign), cwd=cwd).returncode == 0
    assert len(text_sends(service.sends())) == 6

    again = in_process(env, "run", str(campaign), cwd=cwd)  # refused: nothing to run
    assert again.returncode == 1
    assert "already ran: run 1 completed" in again.stderr and "sent 6 of 6" in again.stderr
    assert "--new-run" in again.stderr
    assert len(text_sends(service.sends())) == 6  # the service saw nothing new

    _add_rows(campaign, ["Nova Pessoa,11987650999"])
    new = in_process(env, "run", str(campaign), "--new-run", cwd=cwd)
    assert new.returncode == 0, new.stderr
    assert "6 skipped: those numbers already received this campaign" in new.stdout
    sends = text_sends(service.sends())
    assert len(sends) == 7 and sends[-1]["to"] == "5511987650999"

    everyone = in_process(env, "run", str(campaign), "--new-run", "--include-previous", cwd=cwd)
    assert everyone.returncode == 0, everyone.stderr
    assert len(text_sends(service.sends())) == 14
    status = json.loads(in_process(env, "status", "2", "--json", cwd=cwd).stdout)
    assert status["counts"]["skipped"] == 6 and status["deliveries"] == 7


def _start_paused_run(env: dict[str, str], campaign: Path, service, cwd: Path, sent: int
                      ) -> None:
    """Start `campaign run` in the background, pause it after ``sent`` sends.

    The campaigns pace at 1/s so that the pause (``campaign pause`` in this process, the
    run's process noticing it) lands long before the run could finish on a loaded machine.
    """
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(text_sends(service.sends())) >= sent)
        assert in_process(env, "pause", "1", cwd=cwd).returncode == 0
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stdout is not None and not proc.stdout.closed:
            proc.communicate()  # reaped, its pipes closed, even when a step above failed
    assert proc.returncode == 0, err
    assert "paused" in out


@pytest.mark.slow
def test_an_edited_paused_run_asks_how_to_continue_then_applies_the_pacing(
        make_sandbox, tmp_path) -> None:
    service = make_sandbox()
    service.create_session("s1")
    cwd = tmp_path / "shop"
    campaign = write_project(cwd, 30, rate="1/s")
    env = _service_env(service)
    _start_paused_run(env, campaign, service, cwd, sent=3)
    before = len(text_sends(service.sends()))

    campaign.write_text(campaign.read_text().replace('rate = "1/s"', 'rate = "40/s"'))
    refused = in_process(env, "run", str(campaign), cwd=cwd)
    assert refused.returncode == 1
    assert "pace.rate: 1/s → 40/s" in refused.stderr
    for flag in ("--apply-changes", "--replan", "--as-planned"):
        assert flag in refused.stderr
    assert len(text_sends(service.sends())) == before  # nothing sent while asking

    applied = in_process(env, "run", str(campaign), "--apply-changes", cwd=cwd)
    assert applied.returncode == 0, applied.stderr
    assert "applied to its" in applied.stdout and "completed" in applied.stdout
    per_number = Counter(s["to"] for s in text_sends(service.sends()))
    assert len(per_number) == 30 and set(per_number.values()) == {1}
    # the run now holds the edited pacing and the fingerprint of the edited file
    ledger = Ledger(open_ledger(f"sqlite:///{cwd / 'state' / 'campaign.db'}"))
    run = ledger.get_run(1)
    assert ledger.options(run).rate_per_s == 40.0
    stored = load_fingerprint(run.fingerprint)
    assert stored is not None and stored.definition["pace"]["rate"] == "40/s"
    ledger.close()


@pytest.mark.slow
def test_an_edited_audience_and_text_are_planned_again_without_re_sending(
        make_sandbox, tmp_path) -> None:
    service = make_sandbox()
    service.create_session("s1")
    cwd = tmp_path / "shop"
    campaign = write_project(cwd, 20, rate="1/s")
    env = _service_env(service)
    _start_paused_run(env, campaign, service, cwd, sent=3)
    sent_before = {s["to"] for s in text_sends(service.sends())}

    edited = campaign.read_text().replace("Oi {{ nome }}", "Olá de novo {{ nome }}")
    campaign.write_text(edited.replace('rate = "1/s"', 'rate = "40/s"'))
    _add_rows(campaign, ["Nova Pessoa,11987650999"])
    refused = in_process(env, "run", str(campaign), "--apply-changes", cwd=cwd)
    assert refused.returncode == 1 and "need --replan" in refused.stderr
    assert "recipients: data/lote.csv (edited)" in refused.stderr

    replanned = in_process(env, "run", str(campaign), "--replan", cwd=cwd)
    assert replanned.returncode == 0, replanned.stderr
    sends = text_sends(service.sends())
    per_number = Counter(s["to"] for s in sends)
    assert len(per_number) == 21 and set(per_number.values()) == {1}
    for send in sends:
        if send["to"] not in sent_before:
            assert send["body"]["text"].startswith("Olá de novo")


@pytest.mark.slow
def test_continuing_as_planned_keeps_the_old_plan(make_sandbox, tmp_path) -> None:
    service = make_sandbox()
    service.create_session("s1")
    cwd = tmp_path / "shop"
    campaign = write_project(cwd, 8, rate="1/s")
    env = _service_env(service)
    _start_paused_run(env, campaign, service, cwd, sent=2)
    campaign.write_text(campaign.read_text().replace("Oi {{ nome }}", "Texto novo {{ nome }}"))
    kept = in_process(env, "run", str(campaign), "--as-planned", cwd=cwd)
    assert kept.returncode == 0, kept.stderr
    texts = [s["body"]["text"] for s in text_sends(service.sends())]
    assert len(texts) == 8 and all(t.startswith("Oi ") for t in texts)
