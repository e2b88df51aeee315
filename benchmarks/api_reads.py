"""Figure H1 (issue 34): the server time of the HTTP API's reads on a seeded ledger.

Reuses a ledger seeded by ``benchmarks/dashboard.py`` (figure D1: paused WhatsApp runs of
10,000 and 1,000,000 deliveries) at ``--url`` (a copy: opening it migrates it and a token
is written to it), and times, median of ``--repeat`` after one warm-up: a run's view as
the API builds it (``reads.run_document``, what ``campaign status --json`` prints) for the
largest and the smallest run, and through the real app on a loopback uvicorn with a
viewer's token (wall time of ``GET /api/v1/runs/{id}``, authentication included), and the
list of runs (``GET /api/v1/runs``). A run's settled ``unknown`` verdicts and skip reasons
are kept between reads (``views/verdict_memo.py``): ``run_document, nothing kept`` empties
that memo before each call (the first read of a run in a process, or after its rows
changed), the other lines read with it. The ``(CPU time)`` lines time the same calls in this
process's CPU time: with SQLite the server's whole work, whatever load the machine has.

On PostgreSQL on this machine, ``(CPU time, process + database, mean)`` adds the CPU
time of the server's processes to this process's: the whole server work of a read,
whatever the machine's load. ``run_document's statements`` and ``read_run_view's
statements`` list the statements one read sends (an event listener on the engine): their
number, each one's median time and their sum (the database's share of the read, round
trips included).

Prints JSON lines::

    {"figure": "H1", "what": "GET /api/v1/runs/{id} (loopback)", "database": "sqlite",
     "run_rows": 1000000, "value": <ms>, "unit": "ms", "min_ms": ..., "max_ms": ...,
     "repeat": 7}
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import emit, log, median_ms


def median_cpu_ms(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """As ``median_ms``, in this process's CPU time (SQLite reads in process: the server's
    own work, whatever else the machine runs)."""
    fn()
    times = []
    for _ in range(repeat):
        began = time.process_time()
        fn()
        times.append((time.process_time() - began) * 1000)
    return {"value": round(statistics.median(times), 1), "min_ms": round(min(times), 1),
            "max_ms": round(max(times), 1), "repeat": repeat}


def _ticks(pids: list[int]) -> int:
    """CPU clock ticks (user and system) the processes ``pids`` used so far (Linux)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total


def server_cpu_ms(engine: Any, fn: Callable[[], Any], repeat: int) -> dict[str, Any] | None:
    """PostgreSQL on this machine: the CPU time of one call of ``fn`` in this process and
    in the server's processes (every process ``pg_stat_activity`` lists, the backends
    serving this process among them), the mean of ``repeat`` calls (the kernel counts
    whole ticks of 10 ms: a median of single calls would be 0 or 10). The server's own
    work whatever the machine's load, as the CPU time is for SQLite."""
    from sqlalchemy import text

    with engine.connect() as conn:
        pids = [int(p) for p in conn.execute(text("SELECT pid FROM pg_stat_activity")).scalars()]
    if not pids or not Path(f"/proc/{pids[0]}/stat").exists():
        return None  # a server elsewhere
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    fn()
    began, server = time.process_time(), _ticks(pids)
    for _ in range(repeat):
        fn()
    here = (time.process_time() - began) * 1000 / repeat
    there = (_ticks(pids) - server) * tick_ms / repeat
    return {"value": round(here + there, 1), "process_ms": round(here, 1),
            "database_ms": round(there, 1), "repeat": repeat}


def statements(engine: Any, fn: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """The statements one call of ``fn`` sends (an event listener on ``engine``): how many,
    and each one's median time over ``repeat`` calls (from sending it to its result, the
    rows fetched by the driver), slowest first; their sum's median."""
    from sqlalchemy import event

    seen: list[tuple[str, float]] = []

    def before(conn: Any, *_args: Any) -> None:
        conn.info["h1_began"] = time.perf_counter()

    def after(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append((" ".join(statement.split())[:90],
                     (time.perf_counter() - conn.info["h1_began"]) * 1000))

    fn()
    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    rounds: list[list[tuple[str, float]]] = []
    try:
        for _ in range(repeat):
            seen.clear()
            fn()
            rounds.append(list(seen))
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)
    counts = sorted({len(r) for r in rounds})
    each = [(rounds[0][i][0], round(statistics.median(r[i][1] for r in rounds
                                                       if len(r) > i), 2))
            for i in range(len(rounds[0]))]
    return {"statements": counts[0] if len(counts) == 1 else counts,
            "sql_ms": round(statistics.median(sum(t for _s, t in r) for r in rounds), 1),
            "each": sorted(each, key=lambda item: -item[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a ledger seeded by dashboard.py (a copy)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    import httpx
    from sqlalchemy import text

    from scheduler.api import reads
    from scheduler.api.app import create_api
    from scheduler.core.httpserver import BackgroundServer
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.api_tokens import create_token
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import load_settings
    from scheduler.views import verdict_memo
    from scheduler.views.run_view import read_run_view

    engine = open_ledger(args.url)
    ledger = Ledger(engine)
    with tempfile.TemporaryDirectory(prefix="h1-") as folder:
        root = Path(folder)
        (root / "config.toml").write_text("", encoding="utf-8")
        settings = load_settings(root / "config.toml", project_dir=root, database_url=args.url)
        with engine.connect() as conn:
            runs = conn.execute(text("SELECT id, planned_count FROM runs "
                                     "ORDER BY planned_count DESC")).all()
        token = create_token(engine, f"h1-{time.time_ns()}", "viewer", utcnow())
        headers = {"Authorization": f"Bearer {token}"}
        log(f"H1: runs {[(r.id, r.planned_count) for r in runs]}, {args.repeat} repeats")
        app = create_api(settings, ledger)
        with BackgroundServer(app) as server, httpx.Client(base_url=server.base_url,
                                                           headers=headers,
                                                           timeout=120) as client:
            for run_id, rows in (runs[0], runs[-1]):
                base = {"figure": "H1", "database": engine.dialect.name, "run_rows": rows,
                        "unit": "ms"}

                def cold(rid: int = run_id) -> None:
                    verdict_memo._kept.clear()
                    verdict_memo._skips.clear()
                    reads.run_document(ledger, settings, rid, utcnow())

                emit({**base, "what": "run_document, nothing kept (in process)",
                      **median_ms(cold, args.repeat)})
                emit({**base, "what": "run_document (the view, in process)", **median_ms(
                    lambda rid=run_id: reads.run_document(ledger, settings, rid, utcnow()),
                    args.repeat)})
                emit({**base, "what": "run_document, nothing kept (CPU time)",
                      **median_cpu_ms(cold, args.repeat)})
                emit({**base, "what": "run_document (CPU time)", **median_cpu_ms(
                    lambda rid=run_id: reads.run_document(ledger, settings, rid, utcnow()),
                    args.repeat)})
                emit({**base, "what": "read_run_view (the dashboard's read, in process)",
                      **median_ms(lambda rid=run_id: read_run_view(
                          ledger, rid, settings=settings, now=utcnow()), args.repeat)})
                if engine.dialect.name == "postgresql":
                    for what, call in (
                            ("run_document", lambda rid=run_id: reads.run_document(
                                ledger, settings, rid, utcnow())),
                            ("read_run_view", lambda rid=run_id: read_run_view(
                                ledger, rid, settings=settings, now=utcnow()))):
                        found = server_cpu_ms(engine, call, args.repeat)
                        if found is not None:
                            emit({**base, "what": f"{what} (CPU time, process + database, "
                                                  "mean)", **found})
                emit({**base, "what": "run_document's statements", **statements(
                    engine, lambda rid=run_id: reads.run_document(ledger, settings, rid,
                                                                  utcnow()), args.repeat)})
                emit({**base, "what": "read_run_view's statements", **statements(
                    engine, lambda rid=run_id: read_run_view(ledger, rid, settings=settings,
                                                             now=utcnow()), args.repeat)})
                emit({**base, "what": "GET /api/v1/runs/{id} (loopback)", **median_ms(
                    lambda rid=run_id: client.get(f"/api/v1/runs/{rid}").raise_for_status(),
                    args.repeat)})
            emit({"figure": "H1", "database": engine.dialect.name, "runs": len(runs),
                  "unit": "ms", "what": "GET /api/v1/runs (loopback)", **median_ms(
                      lambda: client.get("/api/v1/runs").raise_for_status(), args.repeat)})
    emit({"figure": "H1-context", "cpus": os.cpu_count(),
          "load_avg_1m": round(os.getloadavg()[0], 2)})
    engine.dispose()


if __name__ == "__main__":
    main()
