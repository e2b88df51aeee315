"""`campaign run` as a real process: SIGKILL and restart, pause/resume/cancel from another.

The pause and the cancel are asked from the test's own process (``tests.incli``), which is
another process than the run's: what crosses the boundary is the ledger, as from a shell."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from scheduler.ledger.queries.tables import deliveries
from scheduler.settings.engine import EngineSettings
from tests.factories import Service, open_test_ledger, write_project
from tests.incli import in_process
from tests.waiting import running, wait_for

CAMPAIGN = [sys.executable, "-m", "scheduler.cli"]


def _env(service: Service, tmp_path: Path, ledger_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
               CAMPAIGN_STATE_DIR=str(tmp_path / "state"), CAMPAIGN_DATABASE_URL=ledger_url,
               CAMPAIGN_RECEIVER_PORT="0",
               CAMPAIGN_VERIFY_GRACE_S="2",
               # the test sandbox retries a webhook for under a second (not 6 min): a run
               # holds its receiver that long after its last send in doubt
               CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="3")
    return env


def _campaign(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CAMPAIGN, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def _status(env: dict[str, str], cwd: Path, run: int = 1) -> dict:
    out = in_process(env, "status", str(run), "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def project(tmp_path: Path, ledger_url: str, service_factory):
    service = service_factory()
    import asyncio

    asyncio.run(service.connect("s1"))
    path = write_project(tmp_path / "proj", 60, rate="15/s")
    # 150 at 20/s: 7 s of sends, so the pause asked after the fifth lands mid-run
    write_project(tmp_path / "proj", 150, rate="20/s", name="grande")
    return service, path, _env(service, tmp_path, ledger_url)


def _states(ledger_url: str) -> dict[str, str]:
    """Each recipient's delivery state (one step: one row per recipient)."""
    with open_test_ledger(ledger_url) as ledger, ledger.engine.connect() as conn:
        return {to: state for to, state in conn.execute(
            select(deliveries.c.to, deliveries.c.state))}


@pytest.mark.slow
def test_sigkill_mid_run_then_run_again_continues_without_duplicates(project,
                                                                     ledger_url) -> None:
    service, path, env = project
    with running([*CAMPAIGN, "run", str(path)], env=env, cwd=path.parent.parent,
                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as child:
        wait_for(lambda: len(service.sends()) >= 15, 30, "15 sends")
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=10)
    killed_at = len(service.sends())
    assert killed_at < 60
    # the rows the kill left in doubt: claimed (committed before their POST), no answer
    # written; each may or may not have reached the service
    in_doubt = {to for to, state in _states(ledger_url).items() if state == "dispatching"}

    again = _campaign(env, "run", str(path), cwd=path.parent.parent)
    assert again.returncode == 0, again.stderr
    assert "continuing unfinished run 1" in again.stdout
    per_recipient = Counter(s["to"] for s in service.sends())
    assert max(per_recipient.values()) == 1  # nobody twice
    status = _status(env, path.parent.parent)
    assert status["status"] == "completed"
    counts = status["counts"]
    settled = sum(counts.values())
    assert settled == 60 and set(counts) <= {"accepted", "sent", "unknown"}
    states = _states(ledger_url)
    unknown = {to for to, state in states.items() if state == "unknown"}
    # every recipient the service reached is accounted for: all but the unknown were sent
    assert set(per_recipient) >= set(states) - unknown
    # only a row in doubt at the kill ends unknown (one the service may have taken: its
    # proof, the messages.sent, went to the killed run's receiver)...
    assert unknown <= in_doubt
    # ...and how many may be in doubt is not one: a sender's next send is claimed when its
    # pace allows, without waiting for the answer to the last one (a late turn catches up,
    # so under load two claims can be ms apart), and an answered send stays in doubt until
    # its outcome is written with the next claim and its messages.sent reached the receiver.
    # The engine bounds the sends in flight per run only, by `send_concurrency`.
    assert len(in_doubt) <= EngineSettings().send_concurrency
    # none is offered as safe to send again: the killed receiver may have missed its proof
    assert (status.get("unknown_detail") or {}).get("unproven", 0) == 0


@pytest.mark.slow
def test_pause_resume_and_cancel_from_other_processes(project) -> None:
    service, _, env = project
    path = _.parent / "grande.toml"
    cwd = path.parent.parent
    with running([*CAMPAIGN, "run", str(path)], env=env, cwd=cwd,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        wait_for(lambda: len(service.sends()) >= 5, 30, "5 sends")
        paused = in_process(env, "pause", "1", cwd=cwd)
        assert paused.returncode == 0, paused.stderr
        asked = datetime.now(UTC)
        out, err = child.communicate(timeout=30)
    assert "paused" in out, err
    frozen = service.sends()
    last = max(datetime.fromisoformat(s["at"].replace("Z", "+00:00")) for s in frozen)
    assert (last - asked).total_seconds() < 2.0  # sends stopped within the 2 s promise
    time.sleep(0.5)
    assert len(service.sends()) == len(frozen) < 150
    assert _status(env, cwd)["status"] == "paused"

    resumed = _campaign(env, "resume", "1", cwd=cwd)
    assert resumed.returncode == 0, resumed.stderr
    assert _status(env, cwd)["status"] == "completed"
    assert sorted(Counter(s["to"] for s in service.sends()).values()) == [1] * 150

    # a second campaign, cancelled mid-run from another process
    other = write_project(cwd, 200, rate="15/s", name="outra")
    with running([*CAMPAIGN, "run", str(other)], env=env, cwd=cwd,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        wait_for(lambda: len(service.sends()) >= 155, 30, "155 sends")
        assert in_process(env, "cancel", "2", cwd=cwd).returncode == 0
        out, _ = child.communicate(timeout=30)
    status = _status(env, cwd, 2)
    assert status["status"] == "cancelled"
    assert status["counts"].get("skipped", 0) > 0
    assert len(service.sends()) - 150 == sum(
        n for s, n in status["counts"].items() if s in ("accepted", "sent", "delivered",
                                                        "read"))
