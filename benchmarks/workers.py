"""Figures W1 and W2: several ``campaign serve`` workers on one PostgreSQL ledger.

A throwaway PostgreSQL server (``scripts/pg-test-server start --durable``: fsync on) and the
sandbox (another process; sessions auto-connected, recipients silent, so the only events
are ``messages.sent``) run on loopback. Each measurement gets a database of its own.

- **W1** (``--workers 1 2 3``): a stored run of 50,000 one-step texts across 100 senders
  with no pacing (``rate = 100000/s``), sent by N ``campaign serve`` processes; ``value`` =
  sends per second from the sandbox's first to its last accepted send; ``cpu_us`` = the
  workers' CPU (user + system, from ``/proc``, start-up excluded) per delivery, ``db_cpu_us``
  the PostgreSQL server's, ``duplicates`` and ``not_final`` counted at the end.
- **W2**: 3 workers on a paced run (100 senders at 1/s; ``--soak-senders``, ``--soak-rate``)
  with the default lease (``--lease``), killed one at a time with SIGKILL, 10 times at
  random (seeded), each victim restarted; the sandbox answers every request 100 ms late
  (``--latency-ms``) so that each kill catches sends in flight. ``value`` = duplicates at
  the sandbox; ``lost`` (rows not final, or in a sent state the sandbox never saw),
  ``unknown``; the takeover seconds per kill (the latest, among the victim's senders, of
  its first send after the kill by another worker, from the sandbox's timestamps; p50 and
  max, and the max for the senders caught mid-send: rows left ``dispatching``); and, at
  every hand-off of a sender (a kill's, or one given up to a newcomer: the worker of its
  rows changes), the most sends in any 1 s of the 3 s either side, at the sandbox and as
  claimed in the ledger, against the rate, with the same for the steady state elsewhere.
  A line per kill (``W2-kill``), then the summary (``W2``).

One JSON object per line on stdout. ``--quick``: 5,000 deliveries, workers 1 and 2, 3 kills.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _harness import QUIET, SendLog, create_sessions, emit, log, start_sandbox, stop_process
from _pg_workers import (
    SENDERS,
    Workers,
    cpu_s,
    hand_offs,
    in_doubt,
    leases_of,
    live_workers,
    new_database,
    pace_around,
    postgres,
    prepare_existing,
    run_status,
    server_pids,
    set_latency,
    wait,
    worker_env,
)


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


def soak(admin: str, base_url: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """W2: kill random workers, restart them; duplicates, lost, takeover times, pace."""
    from sqlalchemy import select

    from scheduler.ledger.db import make_engine, open_ledger
    from scheduler.ledger.queries.tables import deliveries as table
    from scheduler.ledger.states import DONE_STATES, SENT_STATES

    lease_s, kills, rate = args.lease, args.kills, float(args.soak_rate.split("/")[0])
    senders = SENDERS[:args.soak_senders]
    deliveries = args.soak_deliveries or int(len(senders) * rate * (kills * (lease_s + 7) + 60))
    rng = random.Random(args.seed)
    set_latency(base_url, args.latency_ms)
    sendlog = SendLog(base_url)
    first = sendlog.refresh()
    name = f"w2_{int(time.time())}"
    url = new_database(admin, name)
    open_ledger(url).dispose()
    workers = Workers(workdir / name, worker_env(base_url, url, lease_s))
    for _ in range(3):
        workers.start()
    wait(lambda: len(live_workers(url, lease_s)) == 3, 120, "3 live workers")
    _url, run_id = prepare_existing(url, name, base_url, deliveries, args.soak_rate, senders)
    wait(lambda: sendlog.refresh() - first > 2 * len(senders), 120, "the first sends")
    victims: list[tuple[float, str, list[str], dict[str, int]]] = []
    moved: list[float] = []
    loads: list[float] = []
    try:
        for k in range(kills):
            time.sleep(rng.uniform(2.0, 4.0))
            held = leases_of(url)
            ids = sorted({w for s, w in held.items() if w and s in senders})
            if not ids:
                break
            victim = rng.choice(ids)
            mine = sorted(s for s, w in held.items() if w == victim and s in senders)
            os.kill(int(victim.split(":")[1]), 9)
            killed_at = time.time()
            loads.append(os.getloadavg()[0])
            doubt = in_doubt(url, victim)
            victims.append((killed_at, victim, mine, doubt))
            workers.start()  # a replacement, as a supervisor would
            while True:  # until another worker holds every one of the victim's senders
                held = leases_of(url)
                if all(held.get(s) not in (None, victim) for s in mine):
                    break
                time.sleep(0.1)
            moved.append(time.time() - killed_at)
            log(f"kill {k + 1}/{kills}: worker {victim} with {len(mine)} senders, "
                f"{sum(doubt.values())} sends in flight; leases moved in {moved[-1]:.2f} s")
        wait(lambda: run_status(url, run_id)[0] == "completed", 1800, "the run to complete")
    finally:
        workers.stop()
        set_latency(base_url, [0, 0])
    sendlog.refresh()
    sends = sendlog.sends[first:]
    per_to = Counter(str(s["to"]) for s in sends)
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(table.c.to, table.c.state, table.c.sender, table.c.worker,
                                   table.c.dispatched_at)
                            .where(table.c.run_id == run_id)).all()
    engine.dispose()
    worker_of = {str(r.to): r.worker for r in rows}
    times: dict[str, list[tuple[float, str | None]]] = {}
    for i, s in enumerate(sends):
        times.setdefault(str(s["sessionId"]), []).append(
            (sendlog.at(first + i), worker_of.get(str(s["to"]))))
    takeovers, mid_send = [], []
    for killed_at, victim, mine, doubt in victims:
        firsts = {s: min((t for t, w in times.get(s, []) if t > killed_at and w != victim),
                         default=None) for s in mine}
        known = {s: f - killed_at for s, f in firsts.items() if f is not None}
        line = {"figure": "W2-kill", "victim": victim, "senders": len(mine),
                "in_flight": sum(doubt.values()), "senders_mid_send": len(doubt),
                "takeover_s": round(max(known.values()), 2) if known else None,
                "takeover_mid_send_s": round(max((known[s] for s in doubt if s in known),
                                                 default=0.0), 2) if doubt else None,
                "lease_s": lease_s}
        emit(line)
        if known:
            takeovers.append(max(known.values()))
        if doubt and line["takeover_mid_send_s"]:
            mid_send.append(float(line["takeover_mid_send_s"]))
    claims: dict[str, list[float]] = {}
    for r in rows:
        if r.dispatched_at is not None and r.sender is not None:
            claims.setdefault(r.sender, []).append(r.dispatched_at.timestamp())
    moves = hand_offs([(r.sender, r.worker, r.dispatched_at.timestamp()) for r in rows
                       if r.dispatched_at is not None and r.worker and r.sender])
    pace = pace_around({s: [t for t, _w in v] for s, v in times.items()}, claims, moves,
                       rate)
    lost = sum(1 for r in rows if r.state not in DONE_STATES
               or (r.state in SENT_STATES and per_to[str(r.to)] == 0))
    sendlog.close()
    return {"figure": "W2", "value": sum(1 for c in per_to.values() if c > 1),
            "unit": "duplicates", "kills": len(victims), "deliveries": deliveries,
            "senders": len(senders), "lost": lost,
            "unknown": sum(1 for r in rows if r.state == "unknown"),
            "takeover_s_p50": round(statistics.median(takeovers), 2) if takeovers else None,
            "takeover_s_max": round(max(takeovers), 2) if takeovers else None,
            "takeover_mid_send_s_max": round(max(mid_send), 2) if mid_send else None,
            "kills_mid_send": sum(1 for v in victims if v[3]),
            "within_lease_plus_2s": sum(1 for t in takeovers if t <= lease_s + 2),
            "lease_moved_s_p50": round(statistics.median(moved), 2) if moved else None,
            "lease_moved_s_max": round(max(moved), 2) if moved else None,
            **pace, "lease_s": lease_s, "latency_ms": args.latency_ms,
            "load_at_kills": [round(x, 2) for x in loads],
            "load": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    """Measure W1 for each worker count, then W2."""
    from scheduler.dispatch.workers import DEFAULT_LEASE_S

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=50_000)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--soak-deliveries", type=int, default=None,
                        help="W2's run (default: enough to outlast the kills)")
    parser.add_argument("--soak-senders", type=int, default=100)
    parser.add_argument("--soak-rate", default="1/s", help="W2's rate per sender (N/s)")
    parser.add_argument("--latency-ms", type=float, nargs=2, default=[100.0, 100.0],
                        help="the sandbox's answer time during W2 (low high)")
    parser.add_argument("--lease", type=float, default=DEFAULT_LEASE_S,
                        help="W2's lease time (s; default the product's)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--no-soak", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.deliveries, args.workers, args.kills = 5_000, [1, 2], 3
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
            log(f"W2: 3 workers, {args.kills} kills, lease {args.lease:g} s")
            emit(soak(admin, base_url, args, workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
