"""``campaign serve`` with ``[metrics] serve = true`` in another process: ``/metrics`` on its
own port shows the ledger's counts; the webhook receiver's port never answers it."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.ledger.runs import Ledger
from tests.app.support import CAMPAIGN, clean_env
from tests.factories import make_run


@pytest.mark.slow
def test_campaign_serve_answers_metrics_on_its_own_port_not_the_receivers(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 4)
    ledger.request(run, "pause")  # nothing for the serve to send
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "config.toml").write_text("[metrics]\nserve = true\nport = 0\n",
                                          encoding="utf-8")
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_RECEIVER_PORT="0",
                    PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([*CAMPAIGN, "serve"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        metrics = receiver = None
        for line in proc.stdout:
            lines.append(line)
            metrics = metrics or next(iter(re.findall(r"metrics at (http://\S+)", line)), None)
            receiver = receiver or next(iter(re.findall(r"receiver (http://[^/\s]+)", line)),
                                        None)
            if metrics and receiver:
                break
        assert metrics and receiver, "".join(lines)
        scrape = httpx.get(metrics, timeout=20)
        on_receiver = httpx.get(f"{receiver}/metrics", timeout=20)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert scrape.status_code == 200
    samples = [s for f in text_string_to_metric_families(scrape.text) for s in f.samples]
    planned = [s.value for s in samples if s.name == "campaign_run_deliveries"
               and s.labels == {"run": str(run), "channel": "whatsapp", "state": "planned"}]
    assert planned == [4]
    assert on_receiver.status_code == 404 and "campaign_" not in on_receiver.text
