"""Figure P2: scheduler CPU per delivery, end to end against the sandbox, vs a bare client loop.

The sandbox (``create_app(SandboxConfig(auto_connect=True, delivered_rate=0, reply_rate=0))``
under uvicorn) runs in ANOTHER process on 127.0.0.1, with 100 connected sessions and no
webhook. This process measures only its own CPU time (``time.process_time``: user + system,
all threads) for:

- ``scheduler``: a run of N text deliveries stored in a SQLite ledger (a temporary file),
  dispatched by ``scheduler.dispatch.start.dispatch`` (the path ``campaign run`` takes,
  without the progress bar) across 100 senders at a very high rate (no pacing, no jitter),
  at the dispatcher's concurrency; planning/storing the run is not measured (that is P1);
- ``bare``: ``ServiceClient.send_prepared`` in an asyncio loop with the same concurrency,
  the same bodies over the same 100 sessions, and no ledger.

Each round measures bare, scheduler, bare again (the mean of the two bare runs is the
round's baseline); with several rounds the median ratio is kept. One JSON object per line on
stdout: ``{"figure": "P2", "value": <scheduler/bare>, "unit": "ratio", ...}``. First bar
<= 3x; goal <= 1.5x. ``--quick`` shrinks the run; ``--profile FILE`` writes a cProfile of
the (last) scheduler measurement.

The helpers here (``start_sandbox``, ``stop_process``, ``store_text_run``) are shared by
``pacing.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from scheduler.dispatch.start import dispatch
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.service.client import ServiceClient
from scheduler.service.requests import SEND_KINDS

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key-0123456789"
PATH = SEND_KINDS["text"].path
TEXT = "Olá {i}! Sua oferta exclusiva chegou: 20% de desconto até domingo. Responda SAIR."
SENDERS = 100

SANDBOX_CODE = """
import json, sys, uvicorn
from scheduler.sandbox import SandboxConfig, create_app
config = SandboxConfig(api_key=sys.argv[2], **json.loads(sys.argv[3]))
uvicorn.run(create_app(config), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False)
"""


def log(message: str) -> None:
    """Progress on stderr (stdout carries only the JSON lines)."""
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_sandbox(config: dict[str, Any], *, key: str = KEY) -> tuple[subprocess.Popen[bytes], str]:
    """Serve the sandbox with ``config`` in another process (own process group).

    Returns the process and its base URL once ``/sandbox/health`` answers.
    """
    port = free_port()
    cmd = [sys.executable, "-c", SANDBOX_CODE, str(port), key, json.dumps(config)]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base_url, timeout=2, trust_env=False) as http:
            for _ in range(600):
                if proc.poll() is not None:
                    break
                try:
                    http.get("/sandbox/health").raise_for_status()
                    return proc, base_url
                except httpx.HTTPError:
                    time.sleep(0.05)
    except BaseException:
        stop_process(proc)
        raise
    stop_process(proc)
    raise SystemExit("the sandbox did not start")


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """Terminate ``proc``'s process group (started with ``start_new_session``), then kill it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout)


def create_sessions(
    base_url: str, names: list[str], *, key: str = KEY, webhook_url: str | None = None
) -> None:
    """Create (auto-connected) sandbox sessions."""
    with httpx.Client(
        base_url=base_url, timeout=10, headers={"Authorization": key}, trust_env=False
    ) as http:
        for name in names:
            body: dict[str, Any] = {"sessionId": name, "type": "unofficial"}
            if webhook_url:
                body["webhookUrl"] = webhook_url
            http.post("/api/v1/sessions", json=body).raise_for_status()


def sandbox_sends(base_url: str, since: int = 0) -> list[dict[str, Any]]:
    """The sandbox's log of accepted sends, from index ``since``."""
    with httpx.Client(base_url=base_url, timeout=60, trust_env=False) as http:
        response = http.get("/sandbox/sends", params={"since": since})
        response.raise_for_status()
        data = response.json()
    return data["sends"] if isinstance(data, dict) else data


def number(i: int) -> str:
    """The recipient of delivery ``i`` (a Brazilian mobile number)."""
    return f"55119{i:08d}"


def store_text_run(
    ledger: Ledger, deliveries: int, senders: list[str], *, rate: str, name: str, start: datetime
) -> int:
    """A stored run of ``deliveries`` one-step text deliveries over ``senders``; its id."""
    snapshot = {
        "name": name,
        "senders": senders,
        "pace": {"rate": rate},
        "schedule": {"timezone": "UTC"},
        "steps": [{"type": "text"}],
    }
    run_id = ledger.create_run(
        campaign_name=name,
        channel="whatsapp",
        definition_path=f"{name}.toml",
        definition=snapshot,
        delivery_mode="at-most-once",
        timezone="UTC",
    )
    rows = [
        {
            "row": i + 1,
            "to": number(i),
            "step": 0,
            "kind": "text",
            "path": PATH,
            "payload": {"text": TEXT.format(i=i)},
            "variables": {},
            "region": "BR",
            "state": "planned",
            "reason": None,
        }
        for i in range(deliveries)
    ]
    chunk = 5000
    ledger.store_plan(
        run_id, [rows[i : i + chunk] for i in range(0, len(rows), chunk)], start_at=start
    )
    return run_id


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
        result = await dispatch(ledger, client, run, option_overrides={"concurrency": concurrency})
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
    print(
        json.dumps(
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
        ),
        flush=True,
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
