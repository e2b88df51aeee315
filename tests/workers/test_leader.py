"""One trigger leader among the workers: scheduled runs are started by the holder of the
``@trigger`` lease; when it is killed another takes over, and the next fire time still
starts exactly one run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import Session, select

from scheduler.dispatch.shares import TRIGGER_LEASE
from scheduler.dispatch.triggers import add_schedule
from scheduler.ledger.db import open_ledger
from scheduler.ledger.models import Fire
from scheduler.ledger.runs import Ledger
from scheduler.sandbox.testing import write_text_project
from tests.workers.support import (
    LEASE_S,
    WorkerPool,
    connect_sessions,
    leases,
    live_worker_ids,
    wait_until,
    worker_env,
)

SENDERS = ("s1", "s2")


def _leader(ledger: Ledger) -> str | None:
    lease = leases(ledger).get(TRIGGER_LEASE)
    live = live_worker_ids(ledger)
    if lease is None or lease.expires_at <= datetime.now(UTC) or lease.worker not in live:
        return None
    return lease.worker


def _schedule(ledger: Ledger, root: Path, name: str, in_s: float) -> None:
    path = write_text_project(root, 4, rate="10/s", senders=SENDERS, name=name,
                              text="Oi {{ nome }}")
    at = datetime.now(UTC) + timedelta(seconds=in_s)
    add_schedule(ledger, name, str(path), f"at:{at.isoformat()}", "UTC")


def _completed(ledger: Ledger, name: str) -> bool:
    """The campaign's runs completed and its fire settled: the planning child stores the run
    and its parent settles the fire after, so another worker may finish the run between."""
    runs = ledger.list_runs(campaign_name=name)
    with Session(ledger.engine) as session:
        fires = session.exec(select(Fire).where(Fire.campaign_name == name)).all()
    return (bool(runs) and all(r.status == "completed" for r in runs)
            and bool(fires) and all(f.status != "due" for f in fires))


def test_a_killed_trigger_leader_is_replaced_and_a_fire_starts_one_run(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    sandbox = make_sandbox()
    connect_sessions(sandbox, SENDERS)
    (tmp_path / "campaigns").mkdir()
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(sandbox, pg_url)
    workers.start(tmp_path, env)
    workers.start(tmp_path, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == 2, 60, "2 live workers", workers)
    first = wait_until(lambda: _leader(ledger), 30, "a trigger leader", workers)

    _schedule(ledger, tmp_path, "um", 2)
    wait_until(lambda: _completed(ledger, "um"), 60, "the first scheduled run", workers)

    workers.kill(int(first.split(":")[1]))
    _schedule(ledger, tmp_path, "dois", LEASE_S + 3)
    wait_until(lambda: _completed(ledger, "dois"), 60, "the fire after the kill", workers)
    second = _leader(ledger)
    assert second is not None and second != first

    with Session(ledger.engine) as session:
        fires = list(session.exec(select(Fire)).all())
    assert sorted((f.campaign_name, f.status) for f in fires) == [
        ("dois", "started"), ("um", "started")]
    assert [len(ledger.list_runs(campaign_name=n)) for n in ("um", "dois")] == [1, 1]
    assert len(sandbox.sends()) == 8  # each run's 4 recipients, once
    ledger.close()
