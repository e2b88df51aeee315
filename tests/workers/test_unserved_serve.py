"""Two ``campaign serve`` workers on one PostgreSQL ledger whose targets differ: the one
that serves a run is killed with SIGKILL, the other leaves the run alone, and ``campaign
status`` and ``campaign workers`` say that no live worker will send it, why, and what to
do (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.sandbox.testing import write_text_project
from tests.incli import in_process
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    deliveries,
    live_worker_ids,
    plan,
    wait_until,
    worker_env,
)

SENDERS = ("s1", "s2")


def _campaign(root: Path, env: dict[str, str], *args: str) -> str:
    """What a ``campaign`` command printed (it must succeed): run in this process
    (``tests.incli``), as every command here only reads the ledger the workers write."""
    done = in_process(env, *args, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _worker_id(ledger: Ledger, pid: int) -> str:
    """The id of the live worker of process ``pid`` (``host:pid:xxxx``)."""
    return next(w for w in live_worker_ids(ledger) if w.split(":")[1] == str(pid))


def test_a_run_whose_serving_worker_died_and_whose_other_worker_sends_elsewhere_is_told(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    served, elsewhere = make_sandbox(), make_sandbox()  # two services: two targets
    connect_sessions(served, SENDERS)
    campaign = write_text_project(tmp_path, 200, rate="2/s", senders=SENDERS, name="lote",
                                  text="Oi {{ nome }}")
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(served, pg_url)
    server = workers.start(tmp_path, env)
    other = workers.start(tmp_path, worker_env(elsewhere, pg_url))
    wait_until(lambda: len(live_worker_ids(ledger)) == 2, 60, "2 live workers", workers)
    other_id = _worker_id(ledger, other.pid)
    run_id = plan(ledger, campaign, served)
    wait_until(lambda: len(served.sends()) >= 5, 60, "5 sends", workers)
    served_at = urlsplit(served.base_url).netloc
    elsewhere_at = urlsplit(elsewhere.base_url).netloc
    wait_until(lambda: f"run {run_id} (lote) was started against {served_at}"
               in workers.output(), 30, "the other worker to leave the run alone", workers)
    # while its worker lives, the run is not flagged
    assert "sent by no live worker" not in _campaign(tmp_path, env, "status", str(run_id))

    workers.kill(server.pid)
    server.wait()  # reaped: its pid is gone, so its row is no longer live
    wait_until(lambda: live_worker_ids(ledger) == [other_id], 30, "one live worker", workers)
    assert ledger.get_run(run_id).status == "running"
    assert sum(r.state == "planned" for r in deliveries(ledger, run_id)) > 100

    said = (f"run {run_id} (lote) is sent by no live worker: it was started against "
            f"{served_at}; worker {other_id} sends to {elsewhere_at} and leaves it alone")
    remedy = (f"to continue it: start `campaign serve` with base_url pointing at "
              f"{served_at}, or stop it with `campaign cancel {run_id}`")
    status = _campaign(tmp_path, env, "status", str(run_id))
    assert said in status and remedy in status, status
    shown = _campaign(tmp_path, env, "workers")
    assert said in shown and remedy in shown, shown
    assert elsewhere_at in shown  # the survivor, with where it sends
    view = json.loads(_campaign(tmp_path, env, "workers", "--json"))
    (verdict,) = view["unserved"]
    assert verdict["run"] == run_id and verdict["reason"] == said
    assert verdict["workers"] == [{"id": other_id, "target": f"service:{elsewhere_at}"}]
    listed = json.loads(_campaign(tmp_path, env, "runs", "--json"))["runs"]
    assert [r["unserved"]["reason"] for r in listed] == [said]
    assert elsewhere.sends() == []  # the other worker never sent it to its own service
    ledger.close()
