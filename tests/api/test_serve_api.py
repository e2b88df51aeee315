"""``campaign serve`` with ``[api] serve = true`` in another process: ``/api/v1`` on its own
port, never on the webhook receiver's; a run paused, resumed and watched through the API
alone until it ends (serve's workers take a resumed run: PostgreSQL's, and SQLite's one);
then the API's view of it is ``campaign status --json``'s."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from scheduler.core.timeutil import utcnow
from scheduler.ledger.api_tokens import create_token
from scheduler.ledger.runs import Ledger
from tests.app.support import cli, wait_for
from tests.factories import make_run
from tests.serve_process import serve_process


@pytest.mark.slow
def test_a_run_is_steered_and_watched_through_the_api_served_by_serve(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 4)
    ledger.request(run, "pause")  # nothing for serve to send until the API resumes it
    token = create_token(ledger.engine, "crm", "operator", utcnow())
    with serve_process(tmp_path, ledger_url, "[api]\nserve = true\nport = 0\n",
                       "API at") as serve:
        env = serve.env
        api, receiver = serve.url, serve.receiver
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=api, headers=headers, timeout=30) as client:
            assert client.get(f"/runs/{run}").json()["status"] == "paused"
            assert httpx.get(f"{receiver}/api/v1/runs", headers=headers,
                             timeout=30).status_code == 404
            resumed = client.post(f"/runs/{run}/resume").json()
            # serve's workers take it (SQLite's one serve too: the API cannot send it)
            assert resumed["live_workers"] >= 1 and resumed["status"] == "running"

            def ended() -> bool:
                return client.get(f"/runs/{run}").json()["status"] == "completed"

            wait_for(ended, 120, "the run to end")
    # receipts may arrive after the end: the numbers are compared once serve has stopped,
    # through the same API (served here) and the command
    from tests.api.support import project_settings, served

    with served(ledger, project_settings(tmp_path, ledger_url,
                                         "[api]\nserve = true\nport = 0\n")) as here:
        view = here.client.get(f"/api/v1/runs/{run}", headers=here.as_("viewer")).json()
    shown = cli(env, "status", str(run), "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    printed = json.loads(shown.stdout)
    for doc in (view, printed):
        doc["view"].pop("read_at")
    assert view == printed
    assert sum(view["counts"].values()) == 4 and "planned" not in view["counts"]
