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

Prints JSON lines::

    {"figure": "H1", "what": "GET /api/v1/runs/{id} (loopback)", "database": "sqlite",
     "run_rows": 1000000, "value": <ms>, "unit": "ms", "min_ms": ..., "max_ms": ...,
     "repeat": 7}
"""

from __future__ import annotations

import argparse
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
                emit({**base, "what": "GET /api/v1/runs/{id} (loopback)", **median_ms(
                    lambda rid=run_id: client.get(f"/api/v1/runs/{rid}").raise_for_status(),
                    args.repeat)})
            emit({"figure": "H1", "database": engine.dialect.name, "runs": len(runs),
                  "unit": "ms", "what": "GET /api/v1/runs (loopback)", **median_ms(
                      lambda: client.get("/api/v1/runs").raise_for_status(), args.repeat)})
    engine.dispose()


if __name__ == "__main__":
    main()
