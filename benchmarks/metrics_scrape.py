"""Figure M1 (issue 34): the server time of one ``/metrics`` scrape on a seeded ledger.

Reuses a ledger seeded by ``benchmarks/dashboard.py`` (figure D1: paused WhatsApp runs of
10,000 and 1,000,000 deliveries) at ``--url`` (a copy: opening it migrates it, and the
second round sets its paused runs running), and times, median of ``--repeat`` after one
warm-up, with the runs paused (a scrape reads their tallies) and then running (it reads
each run's view, as the dashboard's run page does): the ledger's reading alone
(``read_figures``), the whole text (``exposition``: reading, families, prometheus-client's
writer), and ``GET /metrics`` through the dashboard's real app on a loopback uvicorn
(wall time of the request).

Prints JSON lines::

    {"figure": "M1", "what": "exposition (the whole text)", "database": "sqlite",
     "rows": 1010000, "runs": "running", "value": <ms>, "unit": "ms", "min_ms": ...,
     "max_ms": ..., "repeat": 9}
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _harness import emit, log, median_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a ledger seeded by dashboard.py (a copy)")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()

    import httpx
    from sqlalchemy import text

    from scheduler.core.httpserver import BackgroundServer
    from scheduler.core.timeutil import utcnow
    from scheduler.dashboard.app import create_app
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.runs import Ledger
    from scheduler.metrics.collector import exposition, read_figures
    from scheduler.settings.load import load_settings

    engine = open_ledger(args.url)
    ledger = Ledger(engine)
    with tempfile.TemporaryDirectory(prefix="m1-") as folder:
        root = Path(folder)
        (root / "config.toml").write_text("", encoding="utf-8")
        settings = load_settings(root / "config.toml", project_dir=root, database_url=args.url)
        with engine.connect() as conn:
            rows = int(conn.execute(text("SELECT SUM(planned_count) FROM runs")).scalar() or 0)
        log(f"M1: {rows:,} rows, {args.repeat} repeats")
        app = create_app(settings, ledger)
        with BackgroundServer(app) as server, httpx.Client(base_url=server.base_url,
                                                           timeout=60) as client:
            for status in ("paused", "running"):
                if status == "running":  # the copy's paused runs sending: their views read
                    with engine.begin() as conn:
                        conn.execute(text("UPDATE runs SET status = 'running' "
                                          "WHERE status = 'paused'"))
                base = {"figure": "M1", "database": engine.dialect.name, "rows": rows,
                        "runs": status, "unit": "ms"}
                emit({**base, "what": "read_figures (the ledger's reading)", **median_ms(
                    lambda: read_figures(ledger, settings, utcnow()), args.repeat)})
                emit({**base, "what": "exposition (the whole text)",
                      **median_ms(lambda: exposition(ledger, settings), args.repeat)})
                size = len(client.get("/metrics").content)
                emit({**base, "what": "GET /metrics (dashboard app, loopback)", "bytes": size,
                      **median_ms(lambda: client.get("/metrics").raise_for_status(),
                                args.repeat)})


if __name__ == "__main__":
    main()
