"""Figure P2: scheduler CPU per delivery, end to end against the sandbox, vs a bare client loop.

The sandbox (``create_app(SandboxConfig(auto_connect=True, delivered_rate=0, reply_rate=0))``
under uvicorn) runs in ANOTHER process on 127.0.0.1, with 100 connected sessions and no
webhook. This process measures only its own CPU time (``time.process_time``: user + system,
all threads) for:

- ``scheduler``: a run of N text deliveries stored in a SQLite ledger (a temporary file),
  dispatched by ``scheduler.wiring.dispatch_run`` (the path ``campaign run`` takes,
  without the progress bar) across 100 senders at a very high rate (no pacing, no jitter),
  at the dispatcher's concurrency; planning/storing the run is not measured (that is P1);
- ``bare``: ``ServiceClient.send_prepared`` in an asyncio loop with the same concurrency,
  the same bodies over the same 100 sessions, and no ledger.

Each round measures bare, scheduler, bare again (the mean of the two bare runs is the
round's baseline); with several rounds the median ratio is kept. One JSON object per line on
stdout: ``{"figure": "P2", "value": <scheduler/bare>, "unit": "ratio", ...}``. First bar
<= 3x; goal <= 1.5x. ``--quick`` shrinks the run; ``--profile FILE`` writes a cProfile of
the (last) scheduler measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _harness import (
    KEY,
    TEXT,
    create_sessions,
    emit,
    log,
    number,
    start_sandbox,
    stop_process,
    store_text_run,
)

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.service.client import ServiceClient
from scheduler.service.requests import SEND_KINDS
from scheduler.settings.engine import EngineSettings
from scheduler.wiring import dispatch_run, run_store

PATH = SEND_KINDS["text"].path
SENDERS = 100

# --------------------------------------------------------------------------- measuring


async def measure_bare(
    base_url: str, senders: list[str], deliveries: int, concurrency: int
) -> dict[str, float]:
    """CPU and wall µs per send of a bare ``send_prepared`` loop (no ledger)."""
    remaining = iter(range(deliveries))
    n = len(senders)
    async with ServiceClient(base_url, KEY, concurrency=concurrency) as client:

        async def worker() -> None:
            for i in remaining:
                body = {"sessionId": senders[i % n], "to": number(i), "text": TEXT.format(i=i)}
                await client.send_prepared(PATH, body)

        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        cpu1, wall1 = time.process_time(), time.perf_counter()
    return {
        "cpu_us": 1e6 * (cpu1 - cpu0) / deliveries,
        "wall_us": 1e6 * (wall1 - wall0) / deliveries,
    }


async def measure_scheduler(
    base_url: str,
    ledger: Ledger,
    run_id: int,
    deliveries: int,
    concurrency: int,
    profile: cProfile.Profile | None = None,
) -> dict[str, float]:
    """CPU and wall µs per delivery of dispatching the stored run to the end."""
    run = ledger.get_run(run_id)
    async with ServiceClient(base_url, KEY, concurrency=concurrency) as client:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        engine = EngineSettings(send_concurrency=concurrency)
        result = await dispatch_run(run_store(ledger, run.id), client, run,
                                    option_overrides={"engine": engine})
        if profile is not None:
            profile.disable()
        cpu1, wall1 = time.process_time(), time.perf_counter()
    if result.status != "completed" or result.counts != {"accepted": deliveries}:
        raise SystemExit(
            f"the scheduler run did not complete cleanly: {result.status} "
            f"{result.counts} {result.reason}"
        )
    return {
        "cpu_us": 1e6 * (cpu1 - cpu0) / deliveries,
        "wall_us": 1e6 * (wall1 - wall0) / deliveries,
    }


def run(args: argparse.Namespace, base_url: str, workdir: Path) -> None:
    """Measure the rounds and print the P2 line."""
    senders = [f"bench-{i:03d}" for i in range(SENDERS)]
    create_sessions(base_url, senders)
    profile = cProfile.Profile(time.process_time) if args.profile else None
    ratios: list[float] = []
    sched_us: list[float] = []
    bare_us: list[float] = []
    # warm-up: connections, imports, the sandbox's code paths
    asyncio.run(measure_bare(base_url, senders, min(1000, args.deliveries), args.concurrency))
    for round_no in range(args.rounds):
        engine = open_ledger(f"sqlite:///{workdir / f'ledger-{round_no}.db'}")
        try:
            ledger = Ledger(engine)
            run_id = store_text_run(
                ledger,
                args.deliveries,
                senders,
                rate="100000/s",
                name=f"p2-{round_no}",
                start=datetime.now(UTC),
            )
            before = asyncio.run(measure_bare(base_url, senders, args.deliveries, args.concurrency))
            sched = asyncio.run(
                measure_scheduler(
                    base_url,
                    ledger,
                    run_id,
                    args.deliveries,
                    args.concurrency,
                    profile if round_no == args.rounds - 1 else None,
                )
            )
            after = asyncio.run(measure_bare(base_url, senders, args.deliveries, args.concurrency))
        finally:
            engine.dispose()
        bare = (before["cpu_us"] + after["cpu_us"]) / 2
        ratios.append(sched["cpu_us"] / bare)
        sched_us.append(sched["cpu_us"])
        bare_us.append(bare)
        log(
            f"round {round_no + 1}/{args.rounds}: scheduler {sched['cpu_us']:.1f} µs CPU/"
            f"delivery ({sched['wall_us']:.1f} µs wall), bare {before['cpu_us']:.1f} / "
            f"{after['cpu_us']:.1f} µs CPU/send ({before['wall_us']:.1f} µs wall) → "
            f"{ratios[-1]:.2f}x"
        )
    if profile is not None:
        profile.dump_stats(args.profile)
        log(f"profile of the scheduler written to {args.profile}")
    emit(
        {
            "figure": "P2",
            "value": round(statistics.median(ratios), 3),
            "unit": "ratio",
            "deliveries": args.deliveries,
            "senders": SENDERS,
            "scheduler_us_per_delivery": round(statistics.median(sched_us), 1),
            "bare_us_per_delivery": round(statistics.median(bare_us), 1),
            "concurrency": args.concurrency,
            "rounds": args.rounds,
            "ratios": [round(r, 3) for r in ratios],
        }
    )


def main() -> None:
    """Parse the flags, start the sandbox in another process, measure, clean up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--deliveries", type=int, default=None, help="deliveries per run")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (median kept)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=64,
        help="sends in flight (the dispatcher's default is 64)",
    )
    parser.add_argument("--profile", metavar="FILE", help="cProfile the scheduler into FILE")
    args = parser.parse_args()
    args.deliveries = args.deliveries or (2000 if args.quick else 20_000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    proc, base_url = start_sandbox(
        {"seed": 1, "auto_connect": True, "delivered_rate": 0.0, "reply_rate": 0.0}
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-p2-") as tmp:
            run(args, base_url, Path(tmp))
    finally:
        stop_process(proc)


if __name__ == "__main__":
    main()
