"""Figure PV1 (issue 36): how long ``person export`` and ``person forget`` take on a ledger
of ``--rows`` deliveries (one step each, a distinct number each), and a purge of them all.

Both find the person's rows by index (their deliveries by ``ix_deliveries_to``, the other
tables by the number or the delivery ids, :mod:`scheduler.ledger.person_rows`) and search
only the small tables' text, so their time should not grow with the ledger; before that
(up to fb8352a) they read every text column of every table, a scan of the ledger. A
forget's time is how long it holds its one write transaction (on SQLite, how long a live
run's writes wait). A fresh SQLite ledger in a temporary folder (or ``--url``);
``--repeat`` people exported then forgotten, one at a time; medians, with the min and max.

Prints JSON lines::

    {"figure": "PV1", "what": "person export", "database": "sqlite", "rows": 100000,
     "value": <ms>, "unit": "ms", "min_ms": ..., "max_ms": ..., "repeat": 5}
    {"figure": "PV1", "what": "person forget", ...}
    {"figure": "PV1", "what": "purge (every body older than keep_bodies)", ..., "purged": {...}}
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.privacy.person import export_person, forget_person
from scheduler.privacy.retention import purge
from scheduler.settings.privacy import PrivacySettings

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _number(i: int) -> str:
    return f"55119{i:08d}"


def _ledger(url: str, rows: int) -> Ledger:
    ledger = Ledger(open_ledger(url), clock=lambda: T0)
    run_id = ledger.create_run(campaign_name="bench", channel="whatsapp",
                               definition_path="b.toml", definition={"name": "bench"},
                               delivery_mode="at-most-once", timezone="UTC")
    chunk = [{"row": i + 1, "to": _number(i), "step": 0, "kind": "text",
              "path": "/api/v1/messages/send/text",
              "payload": {"text": f"Olá Pessoa {i}, seu código é {i:06d}"},
              "variables": {"nome": f"Pessoa {i}", "codigo": f"{i:06d}"},
              "region": "BR", "state": "planned", "reason": None} for i in range(rows)]
    ledger.store_plan(run_id, [chunk], start_at=T0)
    return ledger


def _line(what: str, url: str, rows: int, times: list[float], **extra: object) -> str:
    return json.dumps({"figure": "PV1", "what": what, "database": url.split(":")[0]
                       .split("+")[0], "rows": rows,
                       "value": round(statistics.median(times), 1), "unit": "ms",
                       "min_ms": round(min(times), 1), "max_ms": round(max(times), 1),
                       "repeat": len(times), **extra})


def main() -> None:
    """Measure and print the figure's lines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.url or f"sqlite:///{Path(folder) / 'bench.db'}"
        ledger = _ledger(url, args.rows)
        exports, forgets = [], []
        for k in range(args.repeat):
            person = _number(args.rows // (args.repeat + 1) * (k + 1))
            start = time.perf_counter()
            export_person(ledger.engine, person, key=None, who="bench", via="bench", now=T0)
            exports.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            forget_person(ledger.engine, person, key=b"b" * 32, who="bench", via="bench",
                          reason="bench", now=T0)
            forgets.append((time.perf_counter() - start) * 1000)
        print(_line("person export", url, args.rows, exports))
        print(_line("person forget", url, args.rows, forgets))
        with ledger.engine.begin() as conn:  # every row settled long ago
            conn.execute(text("UPDATE deliveries SET state = 'delivered', updated_at = :t"),
                         {"t": T0})
        start = time.perf_counter()
        done = purge(ledger.engine, PrivacySettings(), T0 + timedelta(days=365))
        print(_line("purge (every body older than keep_bodies)", url, args.rows,
                    [(time.perf_counter() - start) * 1000], purged=done.counts))
        ledger.engine.dispose()


if __name__ == "__main__":
    main()
