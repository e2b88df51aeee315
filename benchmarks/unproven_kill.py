"""Figure R3: after ``kill -9`` mid-run, ``campaign resend --unproven`` offers no send the
service took.

The sandbox runs in ANOTHER process (``create_app`` under uvicorn) with 20-200 ms of latency
on every request, no faults, default recipients (receipts, replies), and the service's
webhook retries (7 tries, 5, 10 ... 160 s apart; ``--retry-base-s``). A project folder
holds a text campaign of 3,000 recipients over 4 senders at 10/s. ``campaign run FILE`` is
SIGKILLed (its whole process group) at 15 seeded moments (a delay after its start: planning,
start-up; or after a number of new sends plus up to 0.3 s: mid-request, requests are in
flight at any moment), relaunched each time from the same folder (the receiver's port and
token kept in the state folder, as for a user), and finally left to finish: the last
launch keeps its receiver up through the service's retry horizon of the rows in doubt.

Then, as a user would: ``campaign status 1 --json`` (unknown rows: unproven / unknowable)
and ``campaign resend 1 --unproven``; the rows it queued are compared with the sandbox's
record of the sends it took (``/sandbox/sends``). For each ``unknown`` row the sandbox
took, why its proof did not settle it, from the sandbox's webhook log (``/sandbox/webhooks``:
every attempt, with the message id it carries) and the ledger's stored events.

One JSON line per seed: ``{"figure": "R3", "value": <queued rows the sandbox had taken>,
"unit": "count", ...}`` with ``unknown``, ``taken_unknown``, ``unproven``, ``unknowable``
and the reasons ``status`` gives, ``mid_request_kills`` (kills after which the sandbox
still took a request the killed process had sent), ``why_taken_unknown``, duplicates and
losses. Bar: value 0 for every seed. ``--quick``: 400 recipients, 6 kills, one seed, the
service's schedule scaled down (first retry after 0.5 s, horizon 40 s).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from _harness import (
    SendLog,
    campaign_command,
    campaign_env,
    create_sessions,
    emit,
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

SENDERS = ("kill-1", "kill-2", "kill-3", "kill-4")


def sandbox_config(seed: int, retry_base_s: float) -> dict[str, Any]:
    """The stand-in of the issue: latency, no faults, the service's webhook retries."""
    return {
        "seed": seed,
        "auto_connect": True,
        "latency_ms": [20, 200],
        "webhook_retry_base_s": retry_base_s,
        "webhook_max_attempts": 7,
    }


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``campaign ARGS`` in the project folder."""
    return subprocess.run(
        [*campaign_command(), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def ledger_rows(state: Path) -> list[dict[str, Any]]:
    """Every delivery of the project's ledger: id, to, state, message id."""
    from sqlalchemy import select

    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.queries.tables import deliveries

    engine = open_ledger(f"sqlite:///{state / 'campaign.db'}")
    try:
        with engine.connect() as conn:
            return [
                dict(r._mapping)
                for r in conn.execute(
                    select(
                        deliveries.c.id,
                        deliveries.c.to,
                        deliveries.c.state,
                        deliveries.c.dispatched_at,
                    )
                )
            ]
    finally:
        engine.dispose()


def stored_events(state: Path) -> dict[str, list[str]]:
    """The results of the stored ``messages.sent`` events, by message id (lower case)."""
    from sqlalchemy import select

    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.queries.tables import events

    engine = open_ledger(f"sqlite:///{state / 'campaign.db'}")
    out: dict[str, list[str]] = {}
    try:
        with engine.connect() as conn:
            for norm, result in conn.execute(
                select(events.c.message_id_norm, events.c.result).where(
                    events.c.event == "messages.sent"
                )
            ):
                out.setdefault(str(norm), []).append(str(result))
    finally:
        engine.dispose()
    return out


def why_unsettled(
    message_id: str, attempts: list[dict[str, Any]], stored: dict[str, list[str]]
) -> str:
    """Why a taken send's ``messages.sent`` did not settle its row."""
    norm = message_id.lower()
    if not attempts:
        return "no event emitted"
    if norm in stored:
        return "event stored, matched no row: " + ",".join(sorted(set(stored[norm])))
    ok = [a for a in attempts if a["status"] is not None and 200 <= a["status"] < 300]
    if ok:
        return "answered 2xx but not stored"
    statuses = sorted({str(a["status"] or a["error"]) for a in attempts})
    last = max(a["attempt"] for a in attempts)
    return f"every attempt failed ({last} tries: {', '.join(statuses)})"


def run_seed(args: argparse.Namespace, seed: int, workdir: Path) -> dict[str, Any]:
    """Kill, relaunch, finish, then judge; the R3 line of one seed."""
    proc, base_url = start_sandbox(sandbox_config(seed, args.retry_base_s))
    try:
        return _soak(args, seed, workdir, base_url)
    finally:
        stop_process(proc)


def _soak(args: argparse.Namespace, seed: int, workdir: Path, base_url: str) -> dict[str, Any]:
    import httpx

    rng = random.Random(seed)
    create_sessions(base_url, list(SENDERS))
    path = write_project(
        workdir / "project", args.deliveries, rate=args.rate, senders=SENDERS, name="kill"
    )
    extra = {"CAMPAIGN_WEBHOOK_RETRY_HORIZON_S": str(args.horizon_s)} if args.horizon_s else {}
    env = campaign_env(base_url, workdir, **extra)
    cwd = path.parent.parent
    sendlog = SendLog(base_url)
    kills: list[float] = []  # wall times of the kills
    moments = kill_moments(rng, args.kills, args.deliveries)
    if moments:
        moments[0] = ("delay", rng.uniform(0.3, 1.2))  # the first one while it plans
    wall0 = time.monotonic()
    child = None
    try:
        with (workdir / "campaign.log").open("ab") as logfile:
            for number, moment in enumerate(moments, 1):
                child = spawn_run(path, env, logfile)
                if not wait_for_moment(child, moment, sendlog, rng):
                    log(f"  seed {seed}: launch {number} ended by itself")
                    break
                kill_group(child)
                kills.append(time.time())
                log(
                    f"seed {seed}: kill {number}/{len(moments)} ({moment[0]}="
                    f"{moment[1]:.2f}): {sendlog.refresh():,} sends so far"
                )
            else:
                child = spawn_run(path, env, logfile)
                child.wait(timeout=args.finish_timeout)
                log(f"seed {seed}: final launch exit {child.returncode}")
    finally:
        if child is not None and child.poll() is None:
            kill_group(child)
    sendlog.refresh()
    status = cli(env, cwd, "status", "1", "--json")
    detail = json.loads(status.stdout).get("unknown_detail") if status.returncode == 0 else None
    detail = detail or {"waiting": 0, "unproven": 0, "unknowable": 0}  # none unknown
    said = cli(env, cwd, "status", "1").stdout
    before = {r["id"]: r for r in ledger_rows(workdir / "state")}
    resend = cli(env, cwd, "resend", "1", "--unproven")
    after = ledger_rows(workdir / "state")
    queued = [r for r in after if r["state"] == "planned" and before[r["id"]]["state"] == "unknown"]
    ours = [s for s in sendlog.sends if s.get("sessionId") in SENDERS]
    taken = Counter(str(s["to"]) for s in ours)
    message_of = {str(s["to"]): str(s["messageId"]) for s in ours}
    with httpx.Client(base_url=base_url, timeout=60, trust_env=False) as http:
        hooks = http.get("/sandbox/webhooks").json()
    by_message: dict[str, list[dict[str, Any]]] = {}
    for hook in hooks:
        if hook["event"] == "messages.sent" and hook.get("messageId"):
            by_message.setdefault(str(hook["messageId"]).lower(), []).append(hook)
    stored = stored_events(workdir / "state")
    unknown = [r for r in before.values() if r["state"] == "unknown"]
    why = Counter(
        why_unsettled(message_of[r["to"]], by_message.get(message_of[r["to"]].lower(), []), stored)
        for r in unknown
        if taken[r["to"]]
    )
    mid = sum(1 for k in kills if any(_epoch(s["at"]) > k for s in ours))
    result = verdict(workdir / "state", sendlog.sends, args.deliveries, SENDERS)
    sendlog.close()
    offered_taken = sorted(r["to"] for r in queued if taken[r["to"]])
    if resend.returncode != 0:
        log(f"resend failed: {resend.stderr}")
    reasons = [
        line.strip() for line in said.splitlines() if line.startswith("    ") or "unknown" in line
    ]
    return {
        "figure": "R3",
        "value": len(offered_taken),
        "unit": "count",
        "seed": seed,
        "deliveries": args.deliveries,
        "kills": len(kills),
        "mid_request_kills": mid,
        "unknown": len(unknown),
        "taken_unknown": sum(1 for r in unknown if taken[r["to"]]),
        "unproven": detail.get("unproven"),
        "unknowable": detail.get("unknowable"),
        "waiting": detail.get("waiting"),
        "queued_by_resend": len(queued),
        "why_taken_unknown": dict(why),
        "status_says": reasons,
        "duplicates": result.duplicates,
        "lost": result.lost,
        "completed": result.completed,
        "sandbox_sends": result.sandbox_sends,
        "retry_base_s": args.retry_base_s,
        "horizon_s": args.horizon_s or 360,
        "wall_s": round(time.monotonic() - wall0, 1),
    }


def main() -> None:
    """Parse the flags; one soak per seed, each with its own sandbox and folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="400 recipients, 6 kills, seed 1, schedule scaled down"
    )
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default 1,2,3)")
    parser.add_argument("--deliveries", type=int, default=None)
    parser.add_argument("--kills", type=int, default=None)
    parser.add_argument("--rate", default="10/s", help="pace of each of the 4 senders")
    parser.add_argument(
        "--retry-base-s",
        type=float,
        default=None,
        help="the sandbox's first webhook retry (the service: 5 s)",
    )
    parser.add_argument(
        "--horizon-s",
        type=int,
        default=None,
        help="CAMPAIGN_WEBHOOK_RETRY_HORIZON_S (default: the product's 6 min)",
    )
    parser.add_argument("--finish-timeout", type=float, default=1200.0)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = parser.parse_args()
    args.deliveries = args.deliveries or (400 if args.quick else 3000)
    args.kills = args.kills if args.kills is not None else (6 if args.quick else 15)
    if args.retry_base_s is None:
        args.retry_base_s = 0.5 if args.quick else 5.0
    if args.horizon_s is None and args.quick:
        args.horizon_s = 40
    seeds = [int(s) for s in (args.seeds or ("1" if args.quick else "1,2,3")).split(",")]
    for seed in seeds:
        workdir = Path(tempfile.mkdtemp(prefix=f"bench-r3-{seed}-"))
        try:
            emit(run_seed(args, seed, workdir))
        finally:
            if args.keep:
                log(f"kept {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
