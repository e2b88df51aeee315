"""Figure P5: the spreadsheet report of a 100,000-delivery run.

A child process builds a temporary SQLite ledger holding one WhatsApp run of N deliveries
(three CSV columns each; 2 % skipped at plan time; of the rest 55 % read, 25 % delivered,
10 % sent, 4 % accepted, 3 % failed with one of a few errors, 1 % unknown, 2 % still
planned; 5 % replied, 0.5 % opted out), sent by two senders over several hours. This
process then times ``write_report(..., fmt="xlsx")`` (workbook + two PNG charts) and, for
context, the CSV variant. Prints JSON lines::

    {"figure": "P5", "value": <s>, "unit": "s", "rows": N, "peak_rss_mb": ..., "file_mb": ...}
    {"figure": "P5-csv", "value": <s>, "unit": "s", "rows": N, ...}

Peak RSS is this process's (the report's; the ledger is built in the child); ``cpu_s`` is
this process's CPU time for the report and ``load_avg_1m`` the machine's load, to read a
wall time measured on a busy machine. ``--rows N``
shrinks the run; ``--quick`` is ``--rows 10000``; ``--keep DIR`` keeps the files there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _harness import peak_rss_mb

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CITIES = ("São Paulo", "Campinas", "Rio de Janeiro", "Niterói", "Belo Horizonte", "Curitiba")
ERRORS = ("400: number is not on WhatsApp", "400: text too long", "500: upstream error",
          "timeout after 3 attempts")  # fmt: skip
FMT = "%Y-%m-%d %H:%M:%S.%f"


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(FMT)


def build(db: Path, rows: int) -> int:
    """Create the ledger at ``db`` with one run of ``rows`` deliveries; returns the run id."""
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.runs import Ledger

    engine = open_ledger(f"sqlite:///{db}")
    ledger = Ledger(engine, clock=lambda: T0)
    run_id = ledger.create_run(
        campaign_name="p5", channel="whatsapp", definition_path="campaigns/p5.toml",
        definition={"name": "p5", "senders": ["s1", "s2"]}, delivery_mode="at-most-once",
        timezone="America/Sao_Paulo")  # fmt: skip
    rng = random.Random(5)
    plan = []
    for i in range(rows):
        skipped = rng.random() < 0.02
        plan.append({
            "row": i + 1, "step": 0, "kind": "text", "path": "/api/v1/messages/send/text",
            "to": f"55{rng.choice((11, 19, 21, 31))}9{i:08d}", "region": "BR",
            "payload": {"text": f"Olá Cliente {i}, sua oferta chegou!"},
            "variables": {"nome": f"Cliente {i}", "cidade": rng.choice(CITIES),
                          "plano": str(rng.choice((49, 99, 149)))},
            "state": "skipped" if skipped else "planned",
            "reason": rng.choice(("duplicate", "invalid_number: too short")) if skipped else None,
        })  # fmt: skip
    ledger.store_plan(run_id, [plan], start_at=T0)
    with engine.begin() as conn:
        ids = [r[0] for r in conn.exec_driver_sql(
            "SELECT id FROM deliveries WHERE run_id = ? AND state = 'planned' ORDER BY id",
            (run_id,))]  # fmt: skip
        updates, replies, suppressed = [], [], []
        for n, delivery_id in enumerate(ids):
            at = T0 + timedelta(seconds=n * 0.25)
            roll = rng.random()
            state = ("read" if roll < 0.55 else "delivered" if roll < 0.80 else "sent"
                     if roll < 0.90 else "accepted" if roll < 0.94 else "failed" if roll < 0.97
                     else "unknown" if roll < 0.98 else "planned")  # fmt: skip
            if state == "planned":
                continue
            sent = state in ("read", "delivered", "sent", "accepted")
            reply = sent and rng.random() < 0.05
            text = rng.choice(("Quero!", "Obrigado 😀", "+5511 me liga", "SAIR")) if reply else None
            updates.append((
                state, "s1" if n % 2 else "s2", 1, _utc(at),
                _utc(at + timedelta(seconds=1)) if sent else None,
                f"3EB0{delivery_id:012X}" if sent else None,
                _utc(at + timedelta(seconds=3)) if state in ("read", "delivered", "sent") else None,
                _utc(at + timedelta(seconds=9)) if state in ("read", "delivered") else None,
                _utc(at + timedelta(minutes=4)) if state == "read" else None,
                _utc(at + timedelta(minutes=9)) if reply else None, text,
                _utc(at + timedelta(seconds=2)) if state == "failed" else None,
                rng.choice(ERRORS) if state == "failed" else
                "no messages.sent after a crash" if state == "unknown" else None,
                delivery_id))  # fmt: skip
            if reply:
                replies.append((delivery_id, text, text == "SAIR", at + timedelta(minutes=9)))
        conn.exec_driver_sql(
            "UPDATE deliveries SET state = ?, sender = ?, attempts = ?, dispatched_at = ?,"
            " accepted_at = ?, message_id = ?, sent_at = ?, delivered_at = ?, read_at = ?,"
            " replied_at = ?, reply_text = ?, failed_at = ?, last_error = ? WHERE id = ?",
            updates)  # fmt: skip
        numbers = dict(
            conn.exec_driver_sql(
                'SELECT id, "to" FROM deliveries WHERE run_id = ?', (run_id,)
            ).fetchall()
        )
        conn.exec_driver_sql(
            "INSERT INTO replies (delivery_id, run_id, number, session_id, kind, text, opt_out,"
            " received_at) VALUES (?, ?, ?, 's1', 'text', ?, ?, ?)",
            [(d, run_id, numbers[d], t, o, _utc(a)) for d, t, o, a in replies])  # fmt: skip
        suppressed = [(numbers[d], _utc(a)) for d, _t, o, a in replies if o]
        conn.exec_driver_sql(
            "INSERT OR IGNORE INTO suppressions (number, source, reason, created_at) "
            "VALUES (?, 'reply', 'SAIR', ?)", suppressed)  # fmt: skip
    ledger.set_status(run_id, "completed")
    engine.dispose()
    return run_id


def main() -> None:
    """Build the ledger in a child, then time the reports here and print JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="--rows 10000")
    parser.add_argument("--keep", type=Path, help="write the report files here")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = 10_000 if args.quick else args.rows
    if args.build:
        print(build(args.build, rows))
        return
    with tempfile.TemporaryDirectory(prefix="p5-") as scratch:
        db = Path(scratch) / "ledger.db"
        started = time.perf_counter()
        child = subprocess.run(
            [sys.executable, __file__, "--build", str(db), "--rows", str(rows)],
            check=True,
            capture_output=True,
            text=True,
        )
        build_s = time.perf_counter() - started
        run_id = int(child.stdout.strip().splitlines()[-1])
        out = args.keep or Path(scratch) / "out"

        from scheduler.ledger.db import make_engine
        from scheduler.reports import write_report

        engine = make_engine(f"sqlite:///{db}")
        cpu = time.process_time()
        result = write_report(engine, [run_id], fmt="xlsx", output=out)
        cpu = time.process_time() - cpu
        print(json.dumps({
            "figure": "P5", "value": round(result.seconds, 2), "unit": "s", "rows": rows,
            "cpu_s": round(cpu, 2), "load_avg_1m": round(os.getloadavg()[0], 1),
            "peak_rss_mb": peak_rss_mb(), "file_mb": round(result.path.stat().st_size / 1e6, 1),
            "sheet_rows": result.rows, "build_s": round(build_s, 1),
        }), flush=True)  # fmt: skip
        cpu = time.process_time()
        result = write_report(engine, [run_id], fmt="csv", output=out)
        cpu = time.process_time() - cpu
        print(json.dumps({
            "figure": "P5-csv", "value": round(result.seconds, 2), "unit": "s", "rows": rows,
            "cpu_s": round(cpu, 2),
            "peak_rss_mb": peak_rss_mb(), "file_mb": round(result.path.stat().st_size / 1e6, 1),
        }), flush=True)  # fmt: skip
        engine.dispose()


if __name__ == "__main__":
    main()
