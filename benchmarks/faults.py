"""Figure R2: a ``campaign run`` against injected faults: 10 % 5xx, 5 % time-outs, 5 % 429.

For each fault level (20 % in total, then 30 % in the same 2:1:1 proportions) a fresh sandbox
runs in ANOTHER process on 127.0.0.1 with ``fail_rate`` (5xx), ``timeout_rate`` (the request
hangs ``timeout_hang_s``, a little longer than the client's time-out; half of those are
accepted before hanging, ``timeout_after_accept = 0.5``) and ``throttle_rate`` (429 with
``Retry-After: 1``); recipients never answer, so the only events are ``messages.sent``.

A real ``campaign run FILE`` process (project in a temporary folder, ``CAMPAIGN_BASE_URL``
and key of the sandbox, a private ``CAMPAIGN_STATE_DIR``, ``CAMPAIGN_RECEIVER_PORT=0``,
``CAMPAIGN_HTTP_TIMEOUT_S`` low) dispatches the campaign to the end: 5xx and 429 are retried
with back-off, time-outs are ambiguous and settled from ``messages.sent`` events by the
receiver (sent with proof, else ``unknown`` after the grace: at-most-once).

Reported per level, from the sandbox's ``/sandbox/sends`` and the ledger: ``completed``
(exit 0 and the run completed), ``value`` = duplicates (recipients accepted twice), ``lost``
(neither sent nor in a final state, or claimed sent but never seen), ``unknown``,
``retries`` (attempts beyond the first), ``failed`` and wall seconds. One JSON object per
line on stdout: ``{"figure": "R2", "value": <duplicates>, "unit": "count", "faults": 0.2,
"completed": true, ...}``. Bar: completes with 0 duplicates at 20 %; goal: the same at
30 %. ``--quick`` shrinks the run (500 deliveries).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from _harness import (
    QUIET,
    campaign_env,
    create_sessions,
    emit,
    log,
    run_to_end,
    start_sandbox,
    stop_process,
    verdict,
    write_project,
)

SENDERS = tuple(f"faulty-{i}" for i in range(1, 9))
#: Shares of the faults: 5xx, time-outs, 429 (10 %, 5 %, 5 % at the 20 % level).
MIX = {"fail_rate": 0.5, "timeout_rate": 0.25, "throttle_rate": 0.25}


def one_level(args: argparse.Namespace, faults: float) -> dict[str, Any]:
    """Run the campaign once against ``faults`` of injected faults; the R2 line."""
    rates = {knob: round(share * faults, 4) for knob, share in MIX.items()}
    config = {
        **QUIET,
        **rates,
        "timeout_hang_s": args.http_timeout + 1.0,
        "timeout_after_accept": 0.5,
    }
    workdir = Path(tempfile.mkdtemp(prefix="bench-r2-"))
    proc, base_url = start_sandbox(config)
    try:
        create_sessions(base_url, list(SENDERS))
        path = write_project(
            workdir / "project", args.deliveries, rate=args.rate, senders=SENDERS, name="faults"
        )
        env = campaign_env(base_url, workdir, CAMPAIGN_HTTP_TIMEOUT_S=str(args.http_timeout))
        log(f"faults {faults:.0%} ({rates}): campaign run of {args.deliveries:,} deliveries …")
        exit_code, wall, sends = run_to_end(path, env, workdir, base_url, timeout=args.timeout)
        result = verdict(workdir / "state", sends, args.deliveries, SENDERS)
        output = (workdir / "campaign.log").read_bytes()[-1500:].decode("utf-8", "replace")
        log(
            f"  exit {exit_code} after {wall:.1f} s; ledger {result.counts}; "
            f"{result.sandbox_sends:,} sandbox sends"
        )
        if exit_code != 0 or result.lost or result.duplicates:
            log(f"  last output of campaign run:\n{output}")
    finally:
        stop_process(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "figure": "R2",
        "value": result.duplicates,
        "unit": "count",
        "faults": faults,
        "completed": exit_code == 0 and result.completed,
        "duplicates": result.duplicates,
        "lost": result.lost,
        "unknown": result.unknown,
        "retries": result.retries,
        "failed": result.counts.get("failed", 0),
        "wall_s": round(wall, 1),
        "deliveries": args.deliveries,
        **rates,
        "timeout_hang_s": config["timeout_hang_s"],
        "http_timeout_s": args.http_timeout,
        "unknown_sent_by_sandbox": result.unknown_sent,
        "lost_unsent": result.lost_unsent,
        "lost_claimed_sent": result.lost_claimed_sent,
        "sandbox_sends": result.sandbox_sends,
        "counts": result.counts,
        "senders": len(SENDERS),
        "rate_per_sender": args.rate,
    }


def main() -> None:
    """Parse the flags, run each fault level, print one line per level."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 deliveries per level")
    parser.add_argument("--deliveries", type=int, default=None)
    parser.add_argument("--levels", default="0.2,0.3", help="total fault shares to run")
    parser.add_argument("--rate", default="50/s", help="pace of each of the 8 senders")
    parser.add_argument(
        "--http-timeout",
        type=float,
        default=2.0,
        help="the client's time-out (CAMPAIGN_HTTP_TIMEOUT_S), seconds",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds a run may take before it counts as not completed",
    )
    args = parser.parse_args()
    args.deliveries = args.deliveries or (500 if args.quick else 5000)
    for level in (float(x) for x in args.levels.split(",")):
        emit(one_level(args, level))


if __name__ == "__main__":
    main()
