"""Several ``campaign serve`` workers in separate processes on one PostgreSQL ledger and
one sandbox: they share a run with no duplicate (counted at the sandbox), a worker killed
with SIGKILL has its senders taken over within the lease time plus 2 s at their pace, and
pause reaches every worker."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DONE_STATES, SENT_STATES
from scheduler.sandbox.testing import SandboxHandle, text_project_phone, write_text_project
from tests.incli import in_process
from tests.waiting import log_lines
from tests.workers.support import (
    CAMPAIGN,
    LEASE_S,
    WorkerPool,
    connect_sessions,
    deliveries,
    leases,
    live_worker_ids,
    plan,
    send_times,
    sends_by_recipient,
    wait_until,
    worker_env,
)

SENDERS = tuple(f"s{i}" for i in range(1, 7))


def _start(workers: WorkerPool, n: int, root: Path, sandbox: SandboxHandle, url: str,
           ledger: Ledger) -> None:
    env = worker_env(sandbox, url)
    for _ in range(n):
        workers.start(root, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == n, 60, f"{n} live workers", workers)
    # what the tests read next: each worker's "serving as worker ... receiver URL" line
    wait_until(lambda: len(_receivers(workers)) == n, 60,
               f"the {n} workers' 'serving as worker' lines", workers)


def _finished(ledger: Ledger, run_id: int) -> bool:
    return ledger.get_run(run_id).status == "completed"


def _receivers(workers: WorkerPool) -> dict[str, str]:
    """Each worker's id and its receiver's URL, as it printed them when it started."""
    found = {}
    for log in workers.logs:
        for line in log_lines(log, "serving as worker "):
            if "receiver " in line:
                found[line.split()[3].rstrip(",")] = line.rsplit("receiver ", 1)[1]
    return found


def _number(i: int) -> str:
    return "55" + text_project_phone(i)


@pytest.mark.slow
@pytest.mark.parametrize("n_workers", [2, 3])
def test_workers_share_one_run_with_no_duplicate_and_every_delivery_final(
        n_workers: int, tmp_path: Path, pg_url: str, make_sandbox,
        workers: WorkerPool) -> None:
    sandbox = make_sandbox()
    connect_sessions(sandbox, SENDERS)
    campaign = write_text_project(tmp_path, 90, rate="5/s", senders=SENDERS, name="lote",
                                  text="Oi {{ nome }}")
    ledger = Ledger(open_ledger(pg_url))
    _start(workers, n_workers, tmp_path, sandbox, pg_url, ledger)
    if n_workers == 2:  # `campaign run` plans it and leaves it to the live workers
        # with the same configured receiver_port as a worker on this machine: the workers
        # receive the run's events, so `run` listens on nothing (it used to stop there)
        env = worker_env(sandbox, pg_url)
        port = urlsplit(next(iter(_receivers(workers).values()))).port
        env["CAMPAIGN_RECEIVER_PORT"] = str(port)
        out = subprocess.run([*CAMPAIGN, "run", str(campaign)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert "left to the 2 live `campaign serve` worker(s)" in out.stdout, \
            out.stdout + out.stderr
        (run,) = ledger.list_runs()
        run_id = run.id or 0
    else:
        run_id = plan(ledger, campaign, sandbox)
    wait_until(lambda: _finished(ledger, run_id), 60, "the run to complete", workers)

    rows = deliveries(ledger, run_id)
    sent = sends_by_recipient(sandbox)
    assert len(rows) == 90 and {r.state for r in rows} <= DONE_STATES
    assert {r.state for r in rows} <= set(SENT_STATES)
    assert sorted(sent) == sorted(_number(i) for i in range(90))
    assert max(sent.values()) == 1  # nobody got it twice
    by_worker = Counter(r.worker for r in rows)
    assert len(by_worker) == n_workers, by_worker  # every worker took part
    # each sender went out through one worker at a time: its rows' workers never overlap
    assert all(n >= 5 for n in by_worker.values()), by_worker
    ledger.close()


def _claim_times(rows: list) -> dict[str, list[datetime]]:
    """Each sender's claim times (``dispatched_at``) in the ledger, in order."""
    out: dict[str, list[datetime]] = {}
    for row in rows:
        if row.sender is not None and row.dispatched_at is not None:
            out.setdefault(row.sender, []).append(row.dispatched_at)
    return {sender: sorted(stamps) for sender, stamps in out.items()}


@pytest.mark.slow
def test_a_killed_worker_s_senders_move_within_the_lease_and_keep_their_pace(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    sandbox = make_sandbox()
    connect_sessions(sandbox, SENDERS)
    rate = 2.0
    campaign = write_text_project(tmp_path, 120, rate="2/s", senders=SENDERS, name="lote",
                                  text="Oi {{ nome }}")
    ledger = Ledger(open_ledger(pg_url))
    _start(workers, 2, tmp_path, sandbox, pg_url, ledger)
    run_id = plan(ledger, campaign, sandbox)
    wait_until(lambda: len(sandbox.sends()) >= 30, 60, "30 sends", workers)

    held = leases(ledger)
    # the victim is the worker whose receiver got the latest event: the one the sandbox
    # would go on posting to if webhooks did not follow the leases
    receivers = _receivers(workers)
    latest = next(e["url"] for e in reversed(sandbox.webhooks())
                  if (e["status"] or 0) // 100 == 2)
    victim_id = next(w for w, url in receivers.items() if latest.startswith(url))
    victim_senders = sorted(s for s, lease in held.items()
                            if s in SENDERS and lease.worker == victim_id)
    victim_pid = int(str(victim_id).split(":")[1])
    workers.kill(victim_pid)
    killed_at = datetime.now(UTC)
    wait_until(lambda: _finished(ledger, run_id), 90, "the run to complete", workers)

    rows = deliveries(ledger, run_id)
    sent = sends_by_recipient(sandbox)
    assert {r.state for r in rows} <= DONE_STATES  # every delivery final
    assert max(sent.values()) == 1  # nothing sent twice
    never_proven = {r.to for r in rows if r.state not in SENT_STATES}
    # every recipient got it, except rows in flight at the kill (at most once: unknown)
    assert set(sent) | never_proven == {_number(i) for i in range(120)}
    assert all(r.state == "unknown" for r in rows if r.to in never_proven)
    assert len(never_proven) <= len(victim_senders)

    # the victim's senders' webhooks moved with their leases: every event the sandbox
    # posted for them after the takeover reached the survivor's receiver
    taken_at = killed_at + timedelta(seconds=LEASE_S + 2.0)
    later = [e for e in sandbox.webhooks() if e["sessionId"] in victim_senders
             and e["attempt"] == 1 and datetime.fromisoformat(e["at"]) > taken_at]
    assert later and all((e["status"] or 0) // 100 == 2 for e in later), later[:3]
    assert not any(e["url"].startswith(receivers[victim_id]) for e in later)

    times = send_times(sandbox)
    for sender in victim_senders:
        after = [t for t in times[sender] if t > killed_at]
        assert after, f"{sender} was never taken over"
        assert (after[0] - killed_at).total_seconds() <= LEASE_S + 2.0, (sender, after[0])
    # The pace, from each send's claim time in the ledger, also across the move (the new
    # holder waits for the old one's last send): any 5 consecutive claims of a sender span
    # at least 3 intervals (a claim late by less than an interval is counted at its
    # scheduled instant, SenderPool.on_claim, so the next may follow closer by that much),
    # less the time a claim may wait for a core and the database after its slot on a
    # loaded machine (a second holder sending beside the first would halve these spans, to
    # about 1 s).
    claimed = _claim_times(rows)
    for sender, stamps in claimed.items():
        spans = [(b - a).total_seconds() for a, b in zip(stamps, stamps[4:], strict=False)]
        assert min(spans) >= 3 / rate - 0.3, (sender, min(spans))
    # What the service saw keeps it too, less the arrival jitter of a loaded machine (a
    # request may wait a few hundred ms for a core), which no pacing can take out; a second
    # holder sending beside the first would halve these spans.
    for sender, stamps in times.items():
        spans = [(b - a).total_seconds() for a, b in zip(stamps, stamps[4:], strict=False)]
        assert min(spans) >= 4 / rate - 0.5, (sender, min(spans))
    ledger.close()


@pytest.mark.slow
def test_pause_from_any_process_is_obeyed_by_every_worker(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    sandbox = make_sandbox()
    connect_sessions(sandbox, SENDERS)
    campaign = write_text_project(tmp_path, 400, rate="2/s", senders=SENDERS, name="lote",
                                  text="Oi {{ nome }}")
    ledger = Ledger(open_ledger(pg_url))
    _start(workers, 2, tmp_path, sandbox, pg_url, ledger)
    run_id = plan(ledger, campaign, sandbox)
    wait_until(lambda: len({r.worker for r in deliveries(ledger, run_id)} - {None}) == 2,
               60, "both workers sending", workers)

    # the readouts in this process (tests.incli): they read the ledger the workers write
    shown = in_process(worker_env(sandbox, pg_url), "workers", "--json", cwd=tmp_path)
    view = json.loads(shown.stdout)
    assert len(view["workers"]) == 2
    held = [s for w in view["workers"] for s in w["senders"]]
    assert sorted(held) == sorted(SENDERS)  # each sender held by exactly one worker
    assert sum(w["trigger_leader"] for w in view["workers"]) == 1
    status = in_process(worker_env(sandbox, pg_url), "status", str(run_id), cwd=tmp_path)
    assert sum(f"worker {w['id']}: " in status.stdout for w in view["workers"]) == 2
    # each with what it sent and at what rate, two decimals
    assert len(re.findall(r"worker \S+: \d+ sent, \d+\.\d\d/s$", status.stdout, re.M)) == 2, \
        status.stdout

    ledger.request(run_id, "pause", served=True)
    paused_at = datetime.now(UTC)
    time.sleep(3)
    late = [t for ts in send_times(sandbox).values() for t in ts
            if t > paused_at + timedelta(seconds=2)]
    assert late == []  # no worker sent anything 2 s after the pause
    before = len(sandbox.sends())
    assert ledger.get_run(run_id).status == "paused"

    ledger.request(run_id, "resume", served=True)
    wait_until(lambda: len(sandbox.sends()) > before, 30, "sends after resume", workers)
    ledger.request(run_id, "cancel", served=True)
    wait_until(lambda: ledger.get_run(run_id).status == "cancelled", 30, "the cancel",
               workers)
    assert max(sends_by_recipient(sandbox).values()) == 1
    ledger.close()
