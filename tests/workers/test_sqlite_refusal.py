"""SQLite stays the single-process default: a second ``campaign serve`` on an SQLite
ledger is refused with a message saying why and what to use instead."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scheduler.dispatch.workers import SecondWorkerRefused, WorkerSeat
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.wiring import store_for, worker_store
from tests.workers.support import CAMPAIGN, worker_env


@pytest.mark.sqlite_only(reason="the refusal is SQLite's; PostgreSQL takes many workers")
def test_a_second_serve_on_sqlite_is_refused_saying_to_use_postgresql(
        tmp_path: Path, make_sandbox) -> None:
    url = f"sqlite:///{tmp_path / 'state' / 'ledger.db'}"
    ledger = Ledger(open_ledger(url))
    first = WorkerSeat(worker_store(ledger), store_for(ledger))
    first.register()  # a live worker: this process
    with pytest.raises(SecondWorkerRefused):
        WorkerSeat(worker_store(ledger), store_for(ledger)).register()

    env = {**worker_env(make_sandbox(), url), "CAMPAIGN_WORKER_LEASE_S": "60"}
    (tmp_path / "campaigns").mkdir()
    out = subprocess.run([*CAMPAIGN, "serve"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60)
    text = " ".join((out.stdout + out.stderr).split())
    assert out.returncode != 0
    assert "already serves this SQLite ledger" in text and "PostgreSQL" in text
    assert "database_url" in text and "Traceback" not in text

    first.stop()  # once the first has stopped, another may serve
    WorkerSeat(worker_store(ledger), store_for(ledger)).register()
    ledger.close()
