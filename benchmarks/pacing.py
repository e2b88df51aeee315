"""Figure P3: pacing, achieved / configured rate of 50 senders at 2/s for 60 s, sandbox clock.

The sandbox runs in ANOTHER process on 127.0.0.1 (``create_app`` under uvicorn, sessions
auto-connected, no webhook). This process stores a run with more text deliveries than the
senders can send in the time (so no sender ever runs dry), dispatches it with
``scheduler.wiring.dispatch_run`` on the real clock (``rate = "2/s"``, no jitter, the
default token bucket of 1), and stops it after ``--seconds`` (the stop event ``campaign
run`` sets on Ctrl-C; in-flight sends finish).

Everything is computed from the sandbox's own ``at`` timestamps (``GET /sandbox/sends``,
millisecond precision), per sender:

- achieved rate = (sends - 1) / (last ``at`` - first ``at``); the figure is the overall
  ratio Σ(sends - 1) / Σ(span) / configured rate, and ``worst_sender_ratio`` the sender
  ratio furthest from 1;
- ``max_in_any_1s``: the most sends of one sender in any closed 1-s window. A bucket of 1
  token at 2/s sends at t, t+0.5, t+1.0: 3 is the most it may ever show; 4 is a burst.

One JSON object per line on stdout: ``{"figure": "P3", "value": <achieved/configured>,
"unit": "ratio", ...}``. First bar: within 2 % and never over the bucket (<= 3 in any 1 s);
goal within 0.5 %. ``--quick`` runs 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _harness import (
    KEY,
    create_sessions,
    emit,
    log,
    sandbox_sends,
    start_sandbox,
    stop_process,
    store_text_run,
)

from scheduler.core.units import parse_rate
from scheduler.dispatch.dispatcher import RunSetup
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.service.client import ServiceClient
from scheduler.wiring import dispatch_run, run_store

SENDERS = 50
RATE = "2/s"


def max_in_window(times: list[float], width: float = 1.0) -> int:
    """The most of the sorted ``times`` inside any closed window ``width`` seconds long."""
    best, first = 0, 0
    for last, t in enumerate(times):
        while t - times[first] > width + 1e-9:
            first += 1
        best = max(best, last - first + 1)
    return best


@dataclass
class Pacing:
    """What the sandbox's timestamps say about the pace."""

    overall: float
    worst: float
    max_in_any_1s: int
    sends: int
    per_sender_min: float
    per_sender_max: float


def analyse(sends: list[dict[str, Any]], senders: list[str], rate: float) -> Pacing:
    """Rates and windows per sender from the sandbox's timestamps."""
    times: dict[str, list[float]] = defaultdict(list)
    for send in sends:
        stamp = datetime.fromisoformat(str(send["at"]).replace("Z", "+00:00"))
        times[str(send["sessionId"])].append(stamp.timestamp())
    ratios: dict[str, float] = {}
    intervals = spans = 0.0
    worst_window = 0
    for name in senders:
        ts = sorted(times.get(name, []))
        if len(ts) < 2:
            raise SystemExit(f"sender {name} sent {len(ts)} messages: nothing to measure")
        span = ts[-1] - ts[0]
        ratios[name] = (len(ts) - 1) / span / rate
        intervals += len(ts) - 1
        spans += span
        worst_window = max(worst_window, max_in_window(ts))
    worst = max(ratios.values(), key=lambda r: abs(r - 1.0))
    return Pacing(
        overall=intervals / spans / rate,
        worst=worst,
        max_in_any_1s=worst_window,
        sends=sum(len(v) for v in times.values()),
        per_sender_min=min(ratios.values()),
        per_sender_max=max(ratios.values()),
    )


async def dispatch_for(base_url: str, ledger: Ledger, run_id: int, seconds: float) -> str:
    """Dispatch the run on the real clock and stop it after ``seconds``; its final status."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handle = loop.call_later(seconds, stop.set)
    try:
        async with ServiceClient(base_url, KEY) as client:
            result = await dispatch_run(run_store(ledger, run_id), client, ledger.get_run(run_id),
                                        RunSetup(stop_event=stop))
    finally:
        handle.cancel()
    return result.status


def main() -> None:
    """Parse the flags, start the sandbox in another process, dispatch, analyse, clean up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 s instead of 60 s")
    parser.add_argument("--seconds", type=float, default=None, help="how long to dispatch")
    parser.add_argument("--save", metavar="FILE", help="also write the sandbox's sends (JSON)")
    args = parser.parse_args()
    seconds = args.seconds or (10.0 if args.quick else 60.0)
    rate = parse_rate(RATE)
    senders = [f"pace-{i:02d}" for i in range(SENDERS)]
    # enough that nobody runs dry: 20 % more than the senders can send in the time
    deliveries = int(SENDERS * rate * seconds * 1.2) + SENDERS
    proc, base_url = start_sandbox(
        {"seed": 1, "auto_connect": True, "delivered_rate": 0.0, "reply_rate": 0.0}
    )
    try:
        create_sessions(base_url, senders)
        with tempfile.TemporaryDirectory(prefix="bench-p3-") as tmp:
            engine = open_ledger(f"sqlite:///{Path(tmp) / 'ledger.db'}")
            try:
                ledger = Ledger(engine)
                run_id = store_text_run(
                    ledger, deliveries, senders, rate=RATE, name="p3", start=datetime.now(UTC)
                )
                log(f"dispatching {SENDERS} senders at {RATE} for {seconds:g} s …")
                status = asyncio.run(dispatch_for(base_url, ledger, run_id, seconds))
                counts = ledger.counts(run_id)
            finally:
                engine.dispose()
        sends = sandbox_sends(base_url)
    finally:
        stop_process(proc)
    if args.save:
        Path(args.save).write_text(json.dumps(sends), encoding="utf-8")
    result = analyse(sends, senders, rate)
    log(
        f"run {status}: {counts}; {result.sends} sends in the sandbox; per-sender ratio "
        f"{result.per_sender_min:.4f}..{result.per_sender_max:.4f}"
    )
    if status != "paused" or counts.get("planned", 0) == 0:
        log(f"warning: the run ended {status} with {counts}; senders may have run dry")
    emit(
        {
            "figure": "P3",
            "value": round(result.overall, 5),
            "unit": "ratio",
            "senders": SENDERS,
            "rate_per_sender": rate,
            "seconds": seconds,
            "worst_sender_ratio": round(result.worst, 5),
            "max_in_any_1s": result.max_in_any_1s,
            "sends": result.sends,
        }
    )


if __name__ == "__main__":
    main()
