"""``campaign workers``: the live workers of the ledger, their senders and heartbeat, in
text and ``--json``; a stopped worker is no longer listed."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler.dispatch.shares import TRIGGER_LEASE
from scheduler.dispatch.workers import WorkerSeat
from scheduler.ledger import access
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.runs import Ledger
from scheduler.wiring import store_for, worker_store
from tests.incli import campaign


def _workers(root: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``campaign workers ARGS`` run in this process (a readout: see :mod:`tests.incli`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(CAMPAIGN_DATABASE_URL=url, COLUMNS="200")
    return campaign("workers", *args, env=env, cwd=root)


def test_campaign_workers_lists_live_workers_with_their_senders(
        tmp_path: Path, ledger_url: str) -> None:
    (tmp_path / "campaigns").mkdir()
    ledger = Ledger(open_ledger(ledger_url))
    seat = WorkerSeat(worker_store(ledger), store_for(ledger))
    seat.register()
    now = datetime.now(UTC)
    with access.transaction(ledger.engine) as conn:
        for sender in ("s1", "s2", TRIGGER_LEASE):
            lq.acquire(conn, sender, seat.id, now, now + timedelta(seconds=60))
        lq.acquire(conn, "s3", "gone", now - timedelta(seconds=90), now - timedelta(seconds=30))

    shown = json.loads(_workers(tmp_path, ledger_url, "--json").stdout)
    (worker,) = shown["workers"]
    assert worker["id"] == seat.id and worker["pid"] == os.getpid()
    assert worker["senders"] == ["s1", "s2"] and worker["trigger_leader"] is True
    assert shown["unheld"] == ["s3"]
    text = _workers(tmp_path, ledger_url).stdout
    assert seat.id in text and "2: s1, s2" in text and "held by no live worker: s3" in text

    seat.stop()
    after = _workers(tmp_path, ledger_url)
    assert after.returncode == 0 and "no live workers" in after.stdout
    ledger.close()
