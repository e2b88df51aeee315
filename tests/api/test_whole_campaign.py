"""A whole campaign through the HTTP API alone (issue 34): ``campaign sandbox`` in one
process, ``campaign serve`` with ``[api] serve = true`` in another; the test only speaks
HTTP to the API: it starts a run of the project's campaign file (the same
``Idempotency-Key`` twice starts one run), watches it, pauses and resumes it mid-run (a
paced campaign), waits for its end, downloads its report; then the API's view of the run
equals ``campaign status --json``'s."""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from scheduler.core.timeutil import utcnow
from scheduler.ledger.api_tokens import create_token
from scheduler.ledger.runs import Ledger
from tests.app.support import CAMPAIGN, cli, wait_for
from tests.factories import write_project
from tests.serve_process import serve_process

RECIPIENTS = 10
KEY = "sandbox-key-of-this-test"


@contextmanager
def sandbox_process() -> Iterator[str]:
    """``campaign sandbox`` on a free port in a process of its own; its base URL."""
    env = {**os.environ, "CAMPAIGN_SANDBOX_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*CAMPAIGN, "sandbox", "--port", "0", "--seed", "7",
                             "--reply-rate", "0.3", "--webhook-retry-base-s", "0.5"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "http://127.0.0.1:" in first, first
        base = first.split()[-1]
        with httpx.Client(base_url=base, timeout=10) as client:
            client.post("/api/v1/sessions", headers={"Authorization": KEY},
                        json={"sessionId": "s1", "type": "unofficial"}).raise_for_status()
            client.post("/sandbox/sessions/s1/scan").raise_for_status()
        yield base
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def without_moment(view: dict) -> dict:
    """A run's view without the moment it was read at."""
    view["view"].pop("read_at", None)
    return view


@pytest.mark.slow
def test_a_whole_campaign_through_the_api_alone(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    write_project(tmp_path, RECIPIENTS, rate="1/s")  # campaigns/lote.toml: ~10 s of sends
    token = create_token(ledger.engine, "crm", "operator", utcnow())
    with sandbox_process() as service, serve_process(
            tmp_path, ledger_url, "[api]\nserve = true\nport = 0\n", "API at",
            CAMPAIGN_BASE_URL=service, CAMPAIGN_API_KEY=KEY,
            CAMPAIGN_VERIFY_GRACE_S="1") as serve, httpx.Client(
            base_url=serve.url, timeout=60,
            headers={"Authorization": f"Bearer {token}"}) as api:
        files = api.get("/campaigns").json()["campaigns"]
        assert [(f["name"], f["valid"], f["deliveries"]) for f in files] == [
            ("lote.toml", True, RECIPIENTS)], [f["errors"] for f in files]
        body = {"campaign": "lote.toml"}
        started = api.post("/runs", json=body, headers={"Idempotency-Key": "crm-42"})
        assert started.status_code == 201, started.text
        run = started.json()["run"]
        assert started.json()["live_workers"] == 1
        again = api.post("/runs", json=body, headers={"Idempotency-Key": "crm-42"})
        assert (again.status_code, again.json()["run"]) == (200, run)
        assert [r["run"] for r in api.get("/runs").json()["runs"]] == [run]

        def view() -> dict:
            answer = api.get(f"/runs/{run}")
            assert answer.status_code == 200, answer.text
            return answer.json()

        def planned() -> int:
            return int(view()["counts"].get("planned", 0))

        wait_for(lambda: planned() <= RECIPIENTS - 3, 60, "three sends")
        paused = api.post(f"/runs/{run}/pause")
        assert paused.status_code == 200 and paused.json()["status"] == "paused"
        wait_for(lambda: view()["status"] == "paused", 30, "the worker to stop")
        left = planned()
        assert 0 < left <= RECIPIENTS - 3  # paused mid-run: rows still to send
        resumed = api.post(f"/runs/{run}/resume").json()
        assert resumed["status"] == "running" and resumed["live_workers"] == 1, resumed
        wait_for(lambda: view()["status"] == "completed", 120, "the run to end")
        assert planned() == 0

        book = api.get(f"/runs/{run}/report.xlsx")
        assert book.status_code == 200, book.text
        workbook = load_workbook(io.BytesIO(book.content), read_only=True)
        assert {"Summary", "Recipients"} <= set(workbook.sheetnames)
        assert len(list(workbook["Recipients"].iter_rows(values_only=True))) == 1 + RECIPIENTS
        workbook.close()
        table = api.get(f"/runs/{run}/report.csv")
        assert table.status_code == 200 and len(table.text.splitlines()) == 1 + RECIPIENTS
        assert api.get(f"/runs/{run}/replies").status_code == 200

        # receipts may still arrive: the API and the command agree on one moment
        shown: list[dict] = []

        def agree() -> bool:
            before = without_moment(view())
            printed = cli(serve.env, "status", str(run), "--json", cwd=tmp_path)
            assert printed.returncode == 0, printed.stderr
            shown[:] = [before, without_moment(json.loads(printed.stdout))]
            return before == shown[1] == without_moment(view())

        wait_for(agree, 90, "the API's numbers and status --json's to agree")
        counts = shown[0]["counts"]
        assert sum(counts.values()) == RECIPIENTS and "planned" not in counts
