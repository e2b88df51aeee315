"""Builders of the workers tests: ``campaign serve`` processes sharing one ledger and one
sandbox, a project to plan, and what the sandbox and the ledger say afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from scheduler.ledger import access
from scheduler.ledger.models import Delivery
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.rows import LeaseRow
from scheduler.ledger.runs import Ledger
from scheduler.sandbox.testing import SandboxHandle
from scheduler.usecases.planning import plan_run
from scheduler.wiring import target_of
from tests.waiting import wait_for

CAMPAIGN = [sys.executable, "-m", "scheduler.cli"]
#: Short leases keep the takeover tests quick (a tick every 0.5 s).
LEASE_S = 1.5


def worker_env(sandbox: SandboxHandle, ledger_url: str, **more: str) -> dict[str, str]:
    """The environment of a worker: the sandbox as the service, the shared ledger, short
    leases and grace, a receiver on a free port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(CAMPAIGN_BASE_URL=sandbox.base_url, CAMPAIGN_API_KEY=sandbox.api_key,
               CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_WORKER_LEASE_S=str(LEASE_S),
               CAMPAIGN_VERIFY_GRACE_S="1", CAMPAIGN_RECEIVER_PORT="0",
               PYTHONUNBUFFERED="1", COLUMNS="200", **more)
    return env


@dataclass
class WorkerPool:
    """``campaign serve`` processes started by one test."""

    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def start(self, root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
        """Start a worker in project ``root``; its output goes to a log file there."""
        log = root / f"worker-{len(self.procs)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([*CAMPAIGN, "serve"], cwd=root, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, text=True)
        self.procs.append(proc)
        self.logs.append(log)
        return proc

    def output(self) -> str:
        """What every worker printed so far."""
        return "\n".join(f"--- {log.name}\n{log.read_text()}" for log in self.logs)

    def kill(self, pid: int) -> None:
        """``kill -9`` one of them."""
        os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop every worker still running (SIGTERM, then SIGKILL)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until(predicate: Callable[[], Any], timeout: float, what: str,
               pool: WorkerPool | None = None) -> Any:
    """Poll ``predicate`` until it is truthy; fail naming ``what`` (and the workers' output)."""
    return wait_for(predicate, timeout, what, every=0.1,
                    details=pool.output if pool else None)


def live_worker_ids(ledger: Ledger, lease_s: float = LEASE_S) -> list[str]:
    """Ids of the live workers of the ledger."""
    from datetime import timedelta

    with access.read(ledger.engine) as conn:
        return [w.id for w in lq.live_workers(conn, datetime.now(UTC)
                                              - timedelta(seconds=lease_s))]


def leases(ledger: Ledger) -> dict[str, LeaseRow]:
    """The lease rows by sender."""
    with access.read(ledger.engine) as conn:
        return {row.sender: row for row in lq.all_leases(conn)}


def connect_sessions(sandbox: SandboxHandle, senders: tuple[str, ...]) -> None:
    """Create and scan the senders' sessions on the sandbox."""
    for name in senders:
        sandbox.create_session(name)


def plan(ledger: Ledger, campaign: Path, sandbox: SandboxHandle) -> int:
    """Plan the campaign as a run against the sandbox-as-service; the workers send it."""
    return plan_run(ledger, campaign, start_at=datetime.now(UTC),
                    target=target_of((sandbox.base_url, sandbox.api_key)))


def deliveries(ledger: Ledger, run_id: int) -> list[Delivery]:
    """Every delivery of the run."""
    with Session(ledger.engine) as session:
        return list(session.exec(select(Delivery).where(Delivery.run_id == run_id)).all())


def sends_by_recipient(sandbox: SandboxHandle) -> Counter[str]:
    """How many times the sandbox accepted a message to each number."""
    return Counter(str(s["to"]) for s in sandbox.sends())


def send_times(sandbox: SandboxHandle) -> dict[str, list[datetime]]:
    """The sandbox's acceptance times of each session's sends, in order."""
    out: dict[str, list[datetime]] = {}
    for s in sandbox.sends():
        out.setdefault(str(s["sessionId"]), []).append(
            datetime.fromisoformat(str(s["at"]).replace("Z", "+00:00")))
    return {k: sorted(v) for k, v in out.items()}
