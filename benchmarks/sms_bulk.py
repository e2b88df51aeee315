"""Figure S1: SMS recipients through ``/sms/bulk``, scheduler CPU per recipient vs a bare loop.

The sandbox (``create_app``, seeded, no account webhook, so no ``sms.*`` report is posted)
runs in ANOTHER process on 127.0.0.1. This process measures its own CPU time
(``time.process_time``: user + system, all threads) and wall time for:

- ``scheduler``: an SMS campaign of N recipients (a generated project folder: one step,
  ``route = "marketing"``, ``[pace] rate = "1000000/s"``, ``batch = 1000``, the whole day
  open), planned by ``plan_run`` into a new SQLite ledger (not measured: that is P1), then
  dispatched to the end by ``scheduler.wiring.dispatch_run``, the path ``campaign run``
  takes without the progress bar or the receiver: the SMS channel groups recipients of the
  same rendered text into ``sms/bulk`` requests of up to 1,000 numbers (``sms/send`` for a
  group of one), each request claimed and its per-number results written to the ledger;
- ``bare``: ``ServiceClient.post_prepared`` in a plain asyncio loop at the same
  concurrency, replaying exactly the requests the sandbox logged for a scheduler run (same
  paths, same numbers, same texts), no ledger.

The recipients' texts: each recipient gets one of a few offers drawn at random (seeded)
with the weights of ``--mix`` (default ``70,20,7,3``: four distinct texts, interleaved as in
a real list, so the engine's buffer of 2,000 rows yields some full bulks of 1,000 and some
partial ones); ``--mix 100`` sends one text to everybody.

Each round is bare (the previous round's requests; skipped in the first round), scheduler,
bare (this round's requests); the baseline is the mean of the bare runs around the
scheduler's. One JSON line on stdout: ``{"figure": "S1", "value": <scheduler/bare CPU per
recipient>, "unit": "ratio", ...}`` with recipients per second of both, the median of the
rounds and their spread. ``--quick`` shrinks the run for CI.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _harness import KEY, emit, log, number, sandbox_sends, start_sandbox, stop_process

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.service.account_models import (
    SMS_BULK_PATH,
    SMS_SEND_PATH,
    SmsBulkResult,
    SmsSendResult,
)
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from scheduler.usecases.planning import plan_run
from scheduler.wiring import dispatch_run, run_store

#: The offers of the generated list (GSM-7, one segment each once rendered).
OFFERS = (
    "semana de ofertas, ate 30% off em todas as lojas ate domingo",
    "frete gratis em compras acima de R$ 99 ate sexta-feira",
    "seu cashback de 10% ja esta disponivel no app",
    "liquidacao de inverno: casacos com 40% de desconto",
    "cupom BEMVINDO vale 15% na primeira compra",
    "aniversario da loja: brindes nas compras acima de R$ 150",
)
ANSWERS = {SMS_BULK_PATH: SmsBulkResult, SMS_SEND_PATH: SmsSendResult}

# --------------------------------------------------------------------------- the project


def write_project(root: Path, recipients: int, mix: list[float], seed: int) -> Path:
    """A project folder with an SMS campaign of ``recipients`` people; its file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    offers = rng.choices(range(len(mix)), weights=mix, k=recipients)
    lines = ["nome;telefone;oferta"] + [
        f"Pessoa {i};{number(i)};{OFFERS[offers[i]]}" for i in range(recipients)
    ]
    (root / "data" / "sms.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = root / "campaigns" / "sms_bench.toml"
    path.write_text(
        'name = "sms-bench"\nchannel = "sms"\n'
        '[recipients]\nfile = "data/sms.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\n'
        '[schedule]\ntimezone = "UTC"\nwindow = "00:00-00:00"\ndays = "*"\n'
        '[pace]\nrate = "1000000/s"\nbatch = 1000\n'
        '[[steps]]\nroute = "marketing"\ntext = "Loja Exemplo: {{ oferta }}. Responda SAIR."\n',
        encoding="utf-8",
    )
    return path


# --------------------------------------------------------------------------- measuring


async def measure_scheduler(base_url: str, ledger: Ledger, run_id: int, recipients: int,
                            concurrency: int) -> dict[str, float]:
    """CPU and wall of dispatching the stored run to the end."""
    run = ledger.get_run(run_id)
    async with ServiceClient(base_url, KEY, concurrency=concurrency) as client:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        engine = EngineSettings(send_concurrency=concurrency)
        result = await dispatch_run(run_store(ledger, run.id), client, run,
                                    option_overrides={"engine": engine})
        cpu1, wall1 = time.process_time(), time.perf_counter()
    if result.status != "completed" or result.counts != {"accepted": recipients}:
        raise SystemExit(f"the scheduler run did not complete cleanly: {result.status} "
                         f"{result.counts} {result.reason}; errors: {last_errors(ledger)}")
    return {"cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0}


def last_errors(ledger: Ledger) -> dict[str, int]:
    """The rows' last errors or reasons and how many rows had each (why a run did not end
    clean)."""
    from sqlalchemy import func, select

    from scheduler.ledger.queries.tables import deliveries

    why = func.coalesce(deliveries.c.last_error, deliveries.c.reason)
    with ledger.engine.connect() as conn:
        rows = conn.execute(select(why, func.count()).where(why.is_not(None))
                            .group_by(why)).all()
    return {str(error)[:200]: int(n) for error, n in rows}


async def measure_bare(base_url: str, requests: list[tuple[str, dict[str, Any]]],
                       concurrency: int) -> dict[str, float]:
    """CPU and wall of ``post_prepared`` over ``requests`` in a plain loop (no ledger)."""
    remaining = iter(requests)
    async with ServiceClient(base_url, KEY, concurrency=concurrency) as client:

        async def worker() -> None:
            for path, body in remaining:
                await client.post_prepared(path, body, ANSWERS[path])

        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        cpu1, wall1 = time.process_time(), time.perf_counter()
    return {"cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0}


def logged_requests(base_url: str, since: int) -> list[tuple[str, dict[str, Any]]]:
    """The SMS requests the sandbox accepted from index ``since``, as (path, body)."""
    return [(s["path"], s["body"]) for s in sandbox_sends(base_url, since)
            if s["path"] in ANSWERS]


def numbers_in(requests: list[tuple[str, dict[str, Any]]]) -> int:
    """Recipients the requests carry."""
    return sum(len(b["to"]) if isinstance(b["to"], list) else 1 for _p, b in requests)


def spread(values: list[float]) -> list[float]:
    """[min, max] rounded."""
    return [round(min(values), 3), round(max(values), 3)]


def run(args: argparse.Namespace, base_url: str, workdir: Path) -> None:
    """Measure the rounds and print the S1 line."""
    mix = [float(w) for w in args.mix.split(",")]
    if not 1 <= len(mix) <= len(OFFERS) or any(w <= 0 for w in mix):
        raise SystemExit(f"--mix: 1 to {len(OFFERS)} positive weights")
    campaign = write_project(workdir / "project", args.recipients, mix, args.seed)
    # warm-up: imports, connections, the sandbox's code paths
    warm = [(SMS_BULK_PATH, {"to": [number(i) for i in range(1000)], "text": "Aquecimento",
                             "route": "marketing"})] * 4
    asyncio.run(measure_bare(base_url, warm, args.concurrency))
    previous: list[tuple[str, dict[str, Any]]] | None = None
    ratios, sched_us, bare_us, sched_rps, bare_rps = [], [], [], [], []
    sizes: Counter[str] = Counter()
    requests: list[tuple[str, dict[str, Any]]] = []
    for round_no in range(args.rounds):
        ledger = Ledger(open_ledger(f"sqlite:///{workdir / f'ledger-{round_no}.db'}"))
        try:
            t0 = time.perf_counter()
            run_id = plan_run(ledger, campaign, start_at=datetime.now(UTC),
                              target="service:bench")
            planned = ledger.get_run(run_id).planned_count
            log(f"round {round_no + 1}/{args.rounds}: planned {planned:,} in "
                f"{time.perf_counter() - t0:.1f} s")
            bares = []
            if previous is not None:
                bares.append(asyncio.run(measure_bare(base_url, previous, args.concurrency)))
            since = len(sandbox_sends(base_url))
            sched = asyncio.run(measure_scheduler(base_url, ledger, run_id, planned,
                                                  args.concurrency))
            requests = logged_requests(base_url, since)
            if numbers_in(requests) != planned:
                raise SystemExit(f"the sandbox logged {numbers_in(requests)} numbers for "
                                 f"{planned} recipients")
            bares.append(asyncio.run(measure_bare(base_url, requests, args.concurrency)))
        finally:
            ledger.engine.dispose()
        previous = requests
        bare_cpu = statistics.mean(b["cpu_s"] for b in bares)
        bare_wall = statistics.mean(b["wall_s"] for b in bares)
        ratios.append(sched["cpu_s"] / bare_cpu)
        sched_us.append(1e6 * sched["cpu_s"] / planned)
        bare_us.append(1e6 * bare_cpu / planned)
        sched_rps.append(planned / sched["wall_s"])
        bare_rps.append(planned / bare_wall)
        log(f"  scheduler {sched_us[-1]:.1f} µs CPU/recipient, {sched_rps[-1]:,.0f} "
            f"recipients/s; bare {bare_us[-1]:.1f} µs, {bare_rps[-1]:,.0f}/s "
            f"({len(bares)} runs) → {ratios[-1]:.2f}x")
    sizes = Counter(p for p, _b in requests)
    bulk_sizes = [len(b["to"]) for p, b in requests if p == SMS_BULK_PATH]
    emit({
        "figure": "S1",
        "value": round(statistics.median(ratios), 3),
        "unit": "ratio",
        "spread": spread(ratios),
        "recipients": planned,
        "mix": mix,
        "requests": {"sms/bulk": sizes[SMS_BULK_PATH], "sms/send": sizes[SMS_SEND_PATH]},
        "numbers_per_bulk": {"mean": round(statistics.mean(bulk_sizes), 1) if bulk_sizes
                             else 0, "max": max(bulk_sizes, default=0),
                             "full_1000": sum(1 for n in bulk_sizes if n == 1000)},
        "scheduler_us_per_recipient": round(statistics.median(sched_us), 2),
        "scheduler_us_spread": spread(sched_us),
        "bare_us_per_recipient": round(statistics.median(bare_us), 2),
        "scheduler_recipients_per_s": round(statistics.median(sched_rps)),
        "scheduler_recipients_per_s_spread": [round(min(sched_rps)), round(max(sched_rps))],
        "bare_recipients_per_s": round(statistics.median(bare_rps)),
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "ratios": [round(r, 3) for r in ratios],
    })


def main() -> None:
    """Parse the flags, start the sandbox in another process, measure, clean up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--recipients", type=int, default=None, help="recipients per run")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (median kept)")
    parser.add_argument("--mix", default="70,20,7,3",
                        help="weights of the distinct texts (default 70,20,7,3)")
    parser.add_argument("--concurrency", type=int, default=64,
                        help="requests in flight (the dispatcher's default is 64)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the texts' mix")
    args = parser.parse_args()
    args.recipients = args.recipients or (5000 if args.quick else 100_000)
    args.rounds = args.rounds or (1 if args.quick else 5)
    proc, base_url = start_sandbox({"seed": 1})
    try:
        with tempfile.TemporaryDirectory(prefix="bench-s1-") as tmp:
            run(args, base_url, Path(tmp))
    finally:
        stop_process(proc)


if __name__ == "__main__":
    main()
