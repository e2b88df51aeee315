"""What W1 and W2 (``workers.py``) share: a throwaway PostgreSQL server, ``campaign serve``
processes on one ledger, what the ledger says of their runs, leases and rows in doubt, the
sandbox's answer time, and the pace around each hand-off of a sender (pure, on lists of
epoch seconds). Shared helpers are modules whose names start with ``_``; no script imports
another.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from _harness import KEY, ROOT, campaign_command, stop_process, store_text_run

from scheduler.ledger import access

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


def prepare_existing(url: str, name: str, base_url: str, deliveries: int,
                     rate: str, senders: list[str] = SENDERS) -> tuple[str, int]:
    """Store a run in the (migrated) database at ``url``; (url, run id)."""
    from scheduler.ledger.db import make_engine
    from scheduler.ledger.queries import runs as rq
    from scheduler.ledger.runs import Ledger
    from scheduler.wiring import target_of

    ledger = Ledger(make_engine(url))
    run_id = store_text_run(ledger, deliveries, senders, rate=rate, name=name,
                            start=datetime.now(UTC))
    with access.transaction(ledger.engine) as conn:
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


def in_doubt(url: str, worker: str) -> dict[str, int]:
    """Rows ``worker`` left ``dispatching`` (sends in flight when it died), by sender."""
    from sqlalchemy import func, select

    from scheduler.ledger.db import make_engine
    from scheduler.ledger.queries.tables import deliveries as table

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(select(table.c.sender, func.count()).where(
                table.c.worker == worker, table.c.state == "dispatching",
                table.c.due_at.is_(None)).group_by(table.c.sender)).all())
    finally:
        engine.dispose()


def in_a_second(stamps: list[float]) -> list[int]:
    """For each of ``stamps`` (seconds, sorted here), how many fall in ``[it, it + 1)``."""
    ordered, counts, j = sorted(stamps), [], 0
    for i, t in enumerate(ordered):
        while j < len(ordered) and ordered[j] < t + 1.0:
            j += 1
        counts.append(j - i)
    return counts


def most_in_a_second(stamps: list[float]) -> int:
    """The most of ``stamps`` in any window ``[t, t + 1)`` (0 when none)."""
    return max(in_a_second(stamps), default=0)


def hand_offs(rows: list[tuple[str, str, float]]) -> list[tuple[str, float]]:
    """(sender, when) of each change of worker in a sender's rows ``(sender, worker,
    claimed at)``: the new holder's first claim."""
    found: list[tuple[str, float]] = []
    last: dict[str, str] = {}
    for sender, worker, at in sorted(rows, key=lambda r: r[2]):
        if last.get(sender, worker) != worker:
            found.append((sender, at))
        last[sender] = worker
    return found


def pace_around(times: dict[str, list[float]], claims: dict[str, list[float]],
                moves: list[tuple[str, float]], rate: float) -> dict[str, Any]:
    """The most sends in any 1 s within 3 s of each hand-off (sandbox, ledger claims) and
    the shortest gap there; the same elsewhere (the steady state), against ``rate``. A
    sender at its rate fits ``floor(rate) + 1`` sends in a second (at 1/s: one at each
    end): more is over its rate."""
    near: dict[str, list[float]] = {}
    at_moves, claimed, gaps = [], [], []
    for sender, at in moves:
        near.setdefault(sender, []).append(at)
        around = sorted(t for t in times[sender] if abs(t - at) <= 3)
        at_moves.append(most_in_a_second(around))
        claimed.append(most_in_a_second([t for t in claims[sender] if abs(t - at) <= 3]))
        gaps += [b - a for a, b in pairwise(around)]
    chunks = [c for s, ts in times.items() for c in _away(ts, near.get(s, []))]
    steady = [n for chunk in chunks for n in in_a_second(chunk)]
    steady_gaps = [b - a for c in chunks for a, b in pairwise(c)]
    over = math.floor(rate) + 1
    return {"rate_per_s": rate, "most_allowed_in_1s": over, "hand_offs": len(moves),
            "hand_off_most_in_1s": max(at_moves, default=None),
            "hand_off_most_in_1s_claimed": max(claimed, default=None),
            "hand_offs_over_rate": sum(1 for n in at_moves if n > over),
            "hand_off_min_gap_s": round(min(gaps), 3) if gaps else None,
            "steady_most_in_1s": max(steady, default=None),
            "steady_windows_over_rate": sum(1 for n in steady if n > over),
            "steady_windows": len(steady),
            "steady_min_gap_s": round(min(steady_gaps), 3) if steady_gaps else None}


def _away(stamps: list[float], moves: list[float]) -> list[list[float]]:
    """``stamps`` more than 3 s from every hand-off, in unbroken stretches."""
    out: list[list[float]] = [[]]
    for t in sorted(stamps):
        if any(abs(t - m) <= 3 for m in moves):
            out.append([])
        else:
            out[-1].append(t)
    return [chunk for chunk in out if chunk]


def set_latency(base_url: str, latency_ms: list[float]) -> None:
    """The sandbox holds every request this long (ms, low and high) from now on."""
    import httpx

    httpx.post(f"{base_url}/sandbox/faults", json={"latency_ms": latency_ms},
               timeout=10, trust_env=False).raise_for_status()
