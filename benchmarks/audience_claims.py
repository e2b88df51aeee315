"""Figure A1: the claim transaction's time with a campaign's audience rules, per batch.

One process, one ledger (a temporary SQLite file, or a new database on the PostgreSQL
server of ``--database-url``): a stored run of N one-step deliveries, and a past run that
sent every one of its numbers a message yesterday (so the counts find rows; PostgreSQL's
statistics then refreshed with ``ANALYZE``, as autovacuum would). Each round
claims the next B rows through :meth:`QueueStore.write` (the dispatcher's claim: one
transaction, committed) with ``max_per_day = 1`` (``rules``) and without rules (``none``),
alternating, and times it (wall clock, this process alone on the database). One JSON line
per (database, rules, batch): the median and the 10th/90th percentiles in milliseconds.

What it shows: what the audience check costs a claim, and what the number locks
(``ledger/queries/claim_locks.py``) add to it; ``--quick`` shrinks the run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _harness import emit, log, store_text_run
from _pg_workers import new_database

from scheduler.ledger import access
from scheduler.ledger.changes import AudienceCheck
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.queue_store import QueueStore
from scheduler.ledger.runs import Ledger

START = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
BATCHES = (1, 64, 512)


def _ids(ledger: Ledger, run_id: int) -> list[tuple[int, str]]:
    from sqlalchemy import select

    with access.read(ledger.engine, "read the run's rows") as conn:
        return [(int(i), str(to)) for i, to in conn.execute(
            select(deliveries.c.id, deliveries.c.to).where(deliveries.c.run_id == run_id)
            .order_by(deliveries.c.id))]


def _yesterday(ledger: Ledger, n: int) -> None:
    """A past run whose rows all went out yesterday (the counts then read a row each)."""
    from sqlalchemy import update

    past = store_text_run(ledger, n, ["s1"], rate="10/s", name="past", start=START)
    with access.transaction(ledger.engine, "mark yesterday's sends") as conn:
        conn.execute(update(deliveries).where(deliveries.c.run_id == past).values(
            state="delivered", dispatched_at=START - timedelta(days=1), sender="s1"))


def measure(url: str, label: str, rounds: int) -> None:
    """Time ``rounds`` claims of each batch size, with and without rules."""
    ledger = Ledger(open_ledger(url))
    try:
        need = 2 * rounds * sum(BATCHES)
        run_id = store_text_run(ledger, need, ["s1"], rate="10/s", name="now", start=START)
        _yesterday(ledger, need)
        rows = _ids(ledger, run_id)
        if ledger.engine.dialect.name == "postgresql":  # fresh statistics, as autovacuum's
            with ledger.engine.connect().execution_options(
                    isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE deliveries")
        store = QueueStore(ledger, run_id)
        day_start = START.replace(hour=0)
        taken = 0
        for batch in BATCHES:
            times: dict[str, list[float]] = {"rules": [], "none": []}
            for _ in range(rounds):
                for kind in ("rules", "none"):
                    claims = rows[taken:taken + batch]
                    taken += batch
                    rules = AudienceCheck(1, None, None, day_start, dict(claims)) \
                        if kind == "rules" else None
                    began = _clock()
                    moved = store.write([], [(i, "s1") for i, _to in claims], START,
                                        audience=rules)
                    times[kind].append((_clock() - began) * 1000)
                    assert len(moved) == batch, (kind, batch, len(moved))
            for kind, ms in times.items():
                deciles = statistics.quantiles(ms, n=10)
                emit({"figure": "A1", "database": label, "rules": kind, "batch": batch,
                      "median_ms": round(statistics.median(ms), 3),
                      "p10_ms": round(deciles[0], 3), "p90_ms": round(deciles[-1], 3),
                      "rounds": rounds})
    finally:
        ledger.engine.dispose()


def _clock() -> float:
    import time

    return time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a PostgreSQL server's admin URL "
                        "(default: SQLite only)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 20 if args.quick else 100
    with tempfile.TemporaryDirectory(prefix="a1-") as folder:
        log("A1 on SQLite")
        measure(f"sqlite:///{Path(folder) / 'ledger.db'}", "sqlite", rounds)
    if args.database_url:
        log("A1 on PostgreSQL")
        name = f"a1_{uuid.uuid4().hex[:8]}"
        measure(new_database(args.database_url, name), "postgresql", rounds)


if __name__ == "__main__":
    main()
