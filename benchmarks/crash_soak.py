"""Figure R1: ``kill -9`` at random moments of a 20,000-delivery ``campaign run``, then resume.

The sandbox runs in ANOTHER process on 127.0.0.1 (``create_app`` under uvicorn; sessions
auto-connected; recipients never answer, so the only events are ``messages.sent``). A project
folder in a temporary directory holds a campaign of 20,000 recipients (a CSV) over a few
senders at a high rate. ``campaign run FILE`` runs as a real process with
``CAMPAIGN_BASE_URL``/``CAMPAIGN_API_KEY`` pointing at the sandbox, its own
``CAMPAIGN_STATE_DIR`` (the SQLite ledger and the receiver's kept port and token, as for a
user: events the sandbox retries after a kill reach the next process) and no config file.

It is killed with SIGKILL (its whole process group) at 20 seeded random moments, each
restarted with the same command (which continues the unfinished run), and finally left to
finish. A kill moment is either a random delay after the process starts (start-up,
planning, recovery or sending, whichever it is in) or a random point while it sends (after
a random number of new sends, plus up to 0.3 s).

Counted at the end, from the sandbox's ``/sandbox/sends`` and the ledger:

- ``value`` = duplicates: recipients the sandbox accepted a message for more than once;
- ``lost``: recipients of the CSV neither sent by the sandbox nor in a final ledger state,
  plus ledger rows in a sent state that the sandbox never saw;
- ``unknown``: rows left ``unknown`` (a crash hid whether they went out; at-most-once);
- ``resume_s``: from a restart's process start to its first new send (sandbox ``at``).

One JSON object per line on stdout: ``{"figure": "R1", "value": <duplicates>, "unit":
"count", ...}``. Bar: 0 duplicates, 0 lost; goal: resumed in <= 5 s. ``--quick`` shrinks
the run (2,000 deliveries, 5 kills).
"""

from __future__ import annotations

import argparse
import random
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _harness import (
    QUIET,
    SendLog,
    campaign_env,
    create_sessions,
    emit,
    free_port,
    kill_group,
    kill_moments,
    log,
    spawn_run,
    start_sandbox,
    stop_process,
    verdict,
    wait_for_moment,
    write_project,
)

SENDERS = ("soak-1", "soak-2", "soak-3", "soak-4")


# --------------------------------------------------------------------------- the soak


@dataclass
class Restart:
    """One launch of ``campaign run``."""

    started: float  # epoch seconds (same clock as the sandbox's ``at``)
    sends_before: int
    killed: bool = False
    moment: str = ""
    exit_code: int | None = None
    resume_s: float | None = None


def soak(args: argparse.Namespace, base_url: str, workdir: Path) -> dict[str, Any]:
    """Run, kill, restart, finish; the R1 line."""
    rng = random.Random(args.seed)
    create_sessions(base_url, list(SENDERS))
    path = write_project(
        workdir / "project", args.deliveries, rate=args.rate, senders=SENDERS, name="soak"
    )
    env = campaign_env(base_url, workdir)
    if args.stable_receiver:  # same URL and token each launch: retried events can land
        env["CAMPAIGN_RECEIVER_PORT"] = str(free_port())
        env["CAMPAIGN_WEBHOOK_TOKEN"] = "bench-" + secrets.token_urlsafe(24)
    sendlog = SendLog(base_url)
    restarts: list[Restart] = []
    child: subprocess.Popen[bytes] | None = None
    wall0 = time.monotonic()
    try:
        with (workdir / "campaign.log").open("ab") as logfile:
            finished = False
            for number, moment in enumerate(kill_moments(rng, args.kills, args.deliveries), 1):
                restart = Restart(
                    time.time(), sendlog.refresh(), moment=f"{moment[0]}={moment[1]:.2f}"
                )
                restarts.append(restart)
                child = spawn_run(path, env, logfile)
                if not wait_for_moment(child, moment, sendlog, rng):
                    restart.exit_code = child.wait()
                    log(
                        f"  launch {number}: ended by itself (exit {restart.exit_code}) "
                        "before its kill moment"
                    )
                    finished = True
                    break
                kill_group(child)
                restart.killed = True
                restart.exit_code = child.returncode
                log(
                    f"kill {number}/{args.kills} ({restart.moment}): "
                    f"{sendlog.refresh():,} sends so far"
                )
            if not finished:
                restart = Restart(time.time(), sendlog.refresh(), moment="finish")
                restarts.append(restart)
                child = spawn_run(path, env, logfile)
                restart.exit_code = child.wait(timeout=args.finish_timeout)
                log(f"final launch: exit {restart.exit_code}")
    finally:
        if child is not None and child.poll() is None:
            kill_group(child)
    wall = time.monotonic() - wall0
    sendlog.refresh()
    time.sleep(0.5)
    sendlog.refresh()
    for i, restart in enumerate(restarts):
        end = restarts[i + 1].sends_before if i + 1 < len(restarts) else len(sendlog.sends)
        if i > 0 and end > restart.sends_before:
            restart.resume_s = sendlog.at(restart.sends_before) - restart.started
    result = verdict(workdir / "state", sendlog.sends, args.deliveries, SENDERS)
    sendlog.close()
    resumes = [r.resume_s for r in restarts if r.resume_s is not None]
    log(
        f"runs {result.runs}; ledger {result.counts}; {result.sandbox_sends:,} sandbox sends; "
        f"resume times {[round(r, 2) for r in resumes]}"
    )
    if result.lost or result.duplicates or not result.completed:
        tail = (workdir / "campaign.log").read_bytes()[-3000:].decode("utf-8", "replace")
        log(f"last output of campaign run:\n{tail}")
    return {
        "figure": "R1",
        "value": result.duplicates,
        "unit": "count",
        "deliveries": args.deliveries,
        "kills": sum(1 for r in restarts if r.killed),
        "lost": result.lost,
        "unknown": result.unknown,
        "resume_s_p50": round(statistics.median(resumes), 2) if resumes else None,
        "resume_s_max": round(max(resumes), 2) if resumes else None,
        "completed": result.completed,
        "lost_unsent": result.lost_unsent,
        "lost_claimed_sent": result.lost_claimed_sent,
        "unknown_sent_by_sandbox": result.unknown_sent,
        "extra_sends": result.extra_sends,
        "sandbox_sends": result.sandbox_sends,
        "counts": result.counts,
        "runs": len(result.runs),
        "senders": len(SENDERS),
        "rate_per_sender": args.rate,
        "wall_s": round(wall, 1),
        "seed": args.seed,
        "receiver": ("fixed by the environment" if args.stable_receiver
                     else "kept in the state folder (the default)"),
    }


def main() -> None:
    """Parse the flags, start the sandbox in another process, soak, clean up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 deliveries, 5 kills")
    parser.add_argument("--deliveries", type=int, default=None)
    parser.add_argument("--kills", type=int, default=None)
    parser.add_argument("--rate", default="100/s", help="pace of each of the 4 senders")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments")
    parser.add_argument(
        "--finish-timeout", type=float, default=600.0, help="seconds the last launch may take"
    )
    parser.add_argument(
        "--stable-receiver",
        action="store_true",
        help="fix the receiver port and webhook token in the environment (default: as a user "
        "runs it, the port and token picked once and kept in the state folder)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    args.deliveries = args.deliveries or (2000 if args.quick else 20_000)
    args.kills = args.kills if args.kills is not None else (5 if args.quick else 20)
    workdir = Path(tempfile.mkdtemp(prefix="bench-r1-"))
    proc, base_url = start_sandbox(QUIET)
    try:
        line = soak(args, base_url, workdir)
    finally:
        stop_process(proc)
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    emit(line)


if __name__ == "__main__":
    main()
