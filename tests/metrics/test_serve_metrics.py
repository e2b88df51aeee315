"""``campaign serve`` with ``[metrics] serve = true`` in another process: ``/metrics`` on its
own port shows the ledger's counts; the webhook receiver's port never answers it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.ledger.runs import Ledger
from tests.factories import make_run
from tests.serve_process import serve_process


@pytest.mark.slow
def test_campaign_serve_answers_metrics_on_its_own_port_not_the_receivers(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 4)
    ledger.request(run, "pause")  # nothing for the serve to send
    with serve_process(tmp_path, ledger_url, "[metrics]\nserve = true\nport = 0\n",
                       "metrics at") as serve:
        metrics, receiver = serve.url, serve.receiver
        scrape = httpx.get(metrics, timeout=20)
        on_receiver = httpx.get(f"{receiver}/metrics", timeout=20)
    assert scrape.status_code == 200
    samples = [s for f in text_string_to_metric_families(scrape.text) for s in f.samples]
    planned = [s.value for s in samples if s.name == "campaign_run_deliveries"
               and s.labels == {"run": str(run), "channel": "whatsapp", "state": "planned"}]
    assert planned == [4]
    assert on_receiver.status_code == 404 and "campaign_" not in on_receiver.text
