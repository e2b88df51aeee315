"""Figures W1 and W2: several ``campaign serve`` workers on one PostgreSQL ledger.

A throwaway PostgreSQL server (``scripts/pg-test-server start --durable``: fsync on) and the
sandbox (another process; sessions auto-connected, recipients silent, so the only events
are ``messages.sent``) run on loopback. Each measurement gets a database of its own.

- **W1** (``--workers 1 2 3``): a stored run of 50,000 one-step texts across 100 senders
  with no pacing (``rate = 100000/s``), sent by N ``campaign serve`` processes; ``value`` =
  sends per second from the sandbox's first to its last accepted send; ``cpu_us`` = the
  workers' CPU (user + system, from ``/proc``, start-up excluded) per delivery, ``db_cpu_us``
  the PostgreSQL server's, ``duplicates`` and ``not_final`` counted at the end.
- **W2**: 3 workers on a paced run (100 senders at 1/s) killed one at a time with SIGKILL,
  10 times at random (seeded), each victim restarted; ``value`` = duplicates at the sandbox;
  ``lost`` (rows not final, or in a sent state the sandbox never saw), ``unknown``, and the
  takeover seconds per kill (the latest first send, among the victim's senders, after the
  kill; p50 and max) with the lease time.

One JSON object per line on stdout. ``--quick``: 5,000 deliveries, workers 1 and 2, 3 kills.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _harness import (
    KEY,
    QUIET,
    ROOT,
    SendLog,
    campaign_command,
    create_sessions,
    emit,
    log,
    start_sandbox,
    stop_process,
    store_text_run,
)

SENDERS = [f"w-{i:03d}" for i in range(100)]
TICKS = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def postgres() -> Iterator[tuple[str, Path]]:
    """A throwaway durable PostgreSQL server: (admin URL, its folder)."""
    script = ROOT / "scripts" / "pg-test-server"
    folder = Path(tempfile.mkdtemp(prefix="w1-pg-"))
    try:
        started = subprocess.run(["bash", str(script), "start", "--durable", str(folder)],
                                 check=True, capture_output=True, text=True)
        yield started.stdout.strip().splitlines()[-1], folder
    finally:
        subprocess.run(["bash", str(script), "stop", str(folder)], check=False,
                       capture_output=True)


def new_database(admin_url: str, name: str) -> str:
    """Create database ``name`` on the server; its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (gone ones count 0)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def server_pids(folder: Path) -> list[int]:
    """The PostgreSQL server's processes (its postmaster and the postmaster's children)."""
    master = int((folder / "data" / "postmaster.pid").read_text().split()[0])
    pids = [master]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                pids.append(int(stat.parent.name))
    return pids


class Workers:
    """``campaign serve`` processes on one ledger."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir, self.env = workdir, env
        self.procs: list[subprocess.Popen[bytes]] = []
        (workdir / "campaigns").mkdir(parents=True, exist_ok=True)

    def start(self) -> subprocess.Popen[bytes]:
        """One more worker."""
        out = (self.workdir / f"worker-{len(self.procs)}.log").open("ab")
        proc = subprocess.Popen([*campaign_command(), "serve"], cwd=self.workdir, env=self.env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def live(self) -> list[subprocess.Popen[bytes]]:
        """The workers still running."""
        return [p for p in self.procs if p.poll() is None]

    def stop(self) -> None:
        """Stop every worker."""
        for proc in self.procs:
            stop_process(proc, timeout=30)


def live_workers(url: str, lease_s: float) -> list[str]:
    """Ids of the live workers registered in the ledger at ``url``."""
    from datetime import timedelta

    from scheduler.ledger.db import make_engine
    from scheduler.ledger.queries import leases as lq

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            since = datetime.now(UTC) - timedelta(seconds=lease_s)
            return [w.id for w in lq.live_workers(conn, since)]
    finally:
        engine.dispose()


def wait(predicate: Any, timeout: float, what: str) -> None:
    """Poll until ``predicate()``; exit naming ``what`` on time-out."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def run_status(url: str, run_id: int) -> tuple[str, Counter[str]]:
    """The run's status and its rows by state."""
    from scheduler.ledger.db import make_engine
    from scheduler.ledger.runs import Ledger

    ledger = Ledger(make_engine(url))
    try:
        return str(ledger.get_run(run_id).status), Counter(ledger.counts(run_id))
    finally:
        ledger.close()


def worker_env(base_url: str, url: str, lease_s: float) -> dict[str, str]:
    """The environment of a worker."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(CAMPAIGN_BASE_URL=base_url, CAMPAIGN_API_KEY=KEY, CAMPAIGN_DATABASE_URL=url,
               CAMPAIGN_WORKER_LEASE_S=str(lease_s), CAMPAIGN_RECEIVER_PORT="0",
               CAMPAIGN_VERIFY_GRACE_S="2", PYTHONUNBUFFERED="1")
    return env


def throughput(admin: str, folder: Path, base_url: str, n: int, deliveries: int,
               workdir: Path) -> dict[str, Any]:
    """W1 for ``n`` workers."""
    sendlog = SendLog(base_url)
    first = sendlog.refresh()
    name = f"w1_{n}_{int(time.time())}"
    url = new_database(admin, name)
    from scheduler.ledger.db import open_ledger

    open_ledger(url).dispose()  # migrated before the workers start
    workers = Workers(workdir / name, worker_env(base_url, url, 15.0))
    for _ in range(n):
        workers.start()
    wait(lambda: len(live_workers(url, 15.0)) == n, 120, f"{n} live workers")
    pids = [p.pid for p in workers.procs]
    load0 = os.getloadavg()[0]
    cpu0, db0 = cpu_s(pids), cpu_s(server_pids(folder))
    _url, run_id = prepare_existing(url, name, base_url, deliveries, "100000/s")
    wait(lambda: run_status(url, run_id)[0] == "completed", 3600, "the run to complete")
    cpu1, db1 = cpu_s(pids), cpu_s(server_pids(folder))
    load1 = os.getloadavg()[0]
    workers.stop()
    sendlog.refresh()
    sends = sendlog.sends[first:]
    stamps = sorted(sendlog.at(first + i) for i in range(len(sends)))
    span = stamps[-1] - stamps[0] if len(stamps) > 1 else float("nan")
    per_to = Counter(str(s["to"]) for s in sends)
    _status, counts = run_status(url, run_id)
    sendlog.close()
    return {"figure": "W1", "value": round(len(sends) / span, 1), "unit": "sends/s",
            "workers": n, "deliveries": deliveries, "senders": len(SENDERS),
            "cpu_us": round(1e6 * (cpu1 - cpu0) / deliveries, 1),
            "db_cpu_us": round(1e6 * (db1 - db0) / deliveries, 1),
            "seconds": round(span, 2), "sandbox_sends": len(sends),
            "duplicates": sum(1 for c in per_to.values() if c > 1),
            "not_final": counts.get("planned", 0) + counts.get("dispatching", 0),
            "counts": dict(counts), "load": [round(load0, 2), round(load1, 2)],
            "cpus": os.cpu_count()}


def prepare_existing(url: str, name: str, base_url: str, deliveries: int,
                     rate: str) -> tuple[str, int]:
    """Store a run in the (migrated) database at ``url``; (url, run id)."""
    from scheduler.app.wiring import target_of
    from scheduler.ledger.db import make_engine
    from scheduler.ledger.queries import runs as rq
    from scheduler.ledger.runs import Ledger

    ledger = Ledger(make_engine(url))
    run_id = store_text_run(ledger, deliveries, SENDERS, rate=rate, name=name,
                            start=datetime.now(UTC))
    with ledger.transaction() as conn:
        rq.update_run(conn, run_id, target=target_of((base_url, KEY)))
    ledger.close()
    return url, run_id


def leases_of(url: str) -> dict[str, str | None]:
    """Sender → holding worker (unexpired leases only)."""
    from scheduler.ledger.db import make_engine
    from scheduler.ledger.queries import leases as lq

    engine = make_engine(url)
    now = datetime.now(UTC)
    try:
        with engine.connect() as conn:
            return {r.sender: r.worker for r in lq.all_leases(conn) if r.expires_at > now}
    finally:
        engine.dispose()


def soak(admin: str, base_url: str, kills: int, deliveries: int, lease_s: float,
         seed: int, workdir: Path) -> dict[str, Any]:
    """W2: kill random workers, restart them; duplicates, lost, takeover times."""
    from scheduler.ledger.states import DONE_STATES, SENT_STATES

    rng = random.Random(seed)
    sendlog = SendLog(base_url)
    first = sendlog.refresh()
    name = f"w2_{int(time.time())}"
    url = new_database(admin, name)
    from scheduler.ledger.db import open_ledger

    open_ledger(url).dispose()
    workers = Workers(workdir / name, worker_env(base_url, url, lease_s))
    for _ in range(3):
        workers.start()
    wait(lambda: len(live_workers(url, lease_s)) == 3, 120, "3 live workers")
    _url, run_id = prepare_existing(url, name, base_url, deliveries, "1/s")
    wait(lambda: sendlog.refresh() - first > 200, 120, "the first sends")
    victims: list[tuple[float, list[str]]] = []
    moves: list[float] = []
    try:
        for k in range(kills):
            time.sleep(rng.uniform(2.0, 4.0))
            held = leases_of(url)
            ids = sorted({w for s, w in held.items() if w and s in SENDERS})
            if not ids:
                break
            victim = rng.choice(ids)
            pid = int(victim.split(":")[1])
            senders = sorted(s for s, w in held.items() if w == victim and s in SENDERS)
            os.kill(pid, 9)
            killed_at = time.time()
            victims.append((killed_at, senders))
            workers.start()  # a replacement, as a supervisor would
            while True:  # until another worker holds every one of the victim's senders
                held = leases_of(url)
                if all(held.get(s) not in (None, victim) for s in senders):
                    break
                time.sleep(0.1)
            moves.append(time.time() - killed_at)
            log(f"kill {k + 1}/{kills}: worker {victim} with {len(senders)} senders; "
                f"their leases moved in {moves[-1]:.2f} s")
        wait(lambda: run_status(url, run_id)[0] == "completed", 900, "the run to complete")
    finally:
        workers.stop()
    sendlog.refresh()
    sends = sendlog.sends[first:]
    per_to = Counter(str(s["to"]) for s in sends)
    by_sender: dict[str, list[float]] = {}
    for i, s in enumerate(sends):
        by_sender.setdefault(str(s["sessionId"]), []).append(sendlog.at(first + i))
    takeovers = []
    for killed_at, senders in victims:
        firsts = [min((t for t in by_sender.get(s, []) if t > killed_at), default=None)
                  for s in senders]
        known = [f - killed_at for f in firsts if f is not None]
        if known:
            takeovers.append(max(known))
    from sqlalchemy import select

    from scheduler.ledger.db import make_engine
    from scheduler.ledger.queries.tables import deliveries as table

    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(table.c.to, table.c.state)
                            .where(table.c.run_id == run_id)).all()
    engine.dispose()
    lost = sum(1 for to, state in rows if state not in DONE_STATES
               or (state in SENT_STATES and per_to[str(to)] == 0))
    sendlog.close()
    return {"figure": "W2", "value": sum(1 for c in per_to.values() if c > 1),
            "unit": "duplicates", "kills": len(victims), "deliveries": deliveries,
            "lost": lost, "unknown": sum(1 for _to, s in rows if s == "unknown"),
            "takeover_s_p50": round(statistics.median(takeovers), 2) if takeovers else None,
            "takeover_s_max": round(max(takeovers), 2) if takeovers else None,
            "lease_moved_s_p50": round(statistics.median(moves), 2) if moves else None,
            "lease_moved_s_max": round(max(moves), 2) if moves else None,
            "lease_s": lease_s, "load": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    """Measure W1 for each worker count, then W2."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=50_000)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--soak-deliveries", type=int, default=6_000)
    parser.add_argument("--lease", type=float, default=3.0, help="W2's lease time (s)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--no-soak", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.deliveries, args.workers, args.kills = 5_000, [1, 2], 3
        args.soak_deliveries = 1_500
    with contextlib.ExitStack() as stack:
        admin, folder = stack.enter_context(postgres())
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="w1-")))
        proc, base_url = start_sandbox({**QUIET, "auto_connect": True})
        stack.callback(stop_process, proc)
        create_sessions(base_url, SENDERS)
        for n in args.workers:
            log(f"W1: {n} worker(s), {args.deliveries:,} deliveries")
            emit(throughput(admin, folder, base_url, n, args.deliveries, workdir))
        if not args.no_soak:
            log(f"W2: 3 workers, {args.kills} kills, {args.soak_deliveries:,} deliveries")
            emit(soak(admin, base_url, args.kills, args.soak_deliveries, args.lease,
                      args.seed, workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
