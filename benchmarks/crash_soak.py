"""Figure R1: ``kill -9`` at random moments of a 20,000-delivery ``campaign run``, then resume.

The sandbox runs in ANOTHER process on 127.0.0.1 (``create_app`` under uvicorn; sessions
auto-connected; recipients never answer, so the only events are ``messages.sent``). A project
folder in a temporary directory holds a campaign of 20,000 recipients (a CSV) over a few
senders at a high rate. ``campaign run FILE`` runs as a real process with
``CAMPAIGN_BASE_URL``/``CAMPAIGN_API_KEY`` pointing at the sandbox, its own
``CAMPAIGN_STATE_DIR`` (the SQLite ledger), ``CAMPAIGN_RECEIVER_PORT=0`` (so it starts the
webhook receiver and registers it on the senders) and no config file.

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

The helpers here (project, environment, process and ledger checks) are shared by
``faults.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import httpx
from dispatch_cpu import KEY, create_sessions, free_port, log, start_sandbox, stop_process
from sqlalchemy import select

from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.queries.tables import runs as runs_table
from scheduler.ledger.states import DONE_STATES, SENT_STATES

SENDERS = ("soak-1", "soak-2", "soak-3", "soak-4")
#: The sandbox of the reliability figures: no receipts or replies, quick webhook retries.
QUIET = {
    "seed": 1,
    "auto_connect": True,
    "delivered_rate": 0.0,
    "read_rate": 0.0,
    "reply_rate": 0.0,
    "recipient_delay_ms": [0, 0],
}


# --------------------------------------------------------------------------- the project


def phone(i: int) -> str:
    """The CSV phone number of recipient ``i`` (a São Paulo mobile, national format)."""
    return f"119{87_650_000 + i:08d}"


def write_project(
    root: Path, recipients: int, *, rate: str, senders: tuple[str, ...], name: str
) -> Path:
    """A project folder (campaigns/, data/, templates/) with one text campaign; its file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    lines = ["nome,telefone"] + [f"Pessoa {i},{phone(i)}" for i in range(recipients)]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sender_list = ", ".join(f'"{s}"' for s in senders)
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsenders = [{sender_list}]\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        f'[schedule]\ntimezone = "UTC"\n[pace]\nrate = "{rate}"\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}, sua oferta chegou!"\n',
        encoding="utf-8",
    )
    return path


def campaign_env(base_url: str, workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of ``campaign``: the sandbox, a private state folder, no config file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(
        CAMPAIGN_BASE_URL=base_url,
        CAMPAIGN_API_KEY=KEY,
        CAMPAIGN_STATE_DIR=str(workdir / "state"),
        CAMPAIGN_RECEIVER_PORT="0",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def campaign_command() -> list[str]:
    """``campaign`` of this virtual environment."""
    script = Path(sys.executable).parent / "campaign"
    return [str(script)] if script.exists() else [sys.executable, "-m", "scheduler.cli"]


def spawn_run(path: Path, env: dict[str, str], logfile: IO[bytes]) -> subprocess.Popen[bytes]:
    """``campaign run FILE`` in its own process group; stdout and stderr go to ``logfile``."""
    return subprocess.Popen(
        [*campaign_command(), "run", str(path)],
        env=env,
        cwd=path.parent.parent,
        stdout=logfile,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL ``proc``'s whole process group and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


# --------------------------------------------------------------------------- the sandbox


class SendLog:
    """The sandbox's accepted sends, fetched incrementally (``?since=``)."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=60, trust_env=False)
        self.sends: list[dict[str, Any]] = []

    def refresh(self) -> int:
        """Fetch the sends made since the last call; the total so far."""
        response = self.http.get("/sandbox/sends", params={"since": len(self.sends)})
        response.raise_for_status()
        data = response.json()
        self.sends.extend(data["sends"] if isinstance(data, dict) else data)
        return len(self.sends)

    def at(self, index: int) -> float:
        """The sandbox's timestamp of send ``index`` (epoch seconds)."""
        stamp = str(self.sends[index]["at"]).replace("Z", "+00:00")
        return datetime.fromisoformat(stamp).timestamp()

    def close(self) -> None:
        """Close the HTTP client."""
        self.http.close()


# --------------------------------------------------------------------------- the verdict


@dataclass
class Verdict:
    """What the ledger and the sandbox say after a run."""

    runs: list[dict[str, Any]]
    counts: dict[str, int]
    duplicates: int
    extra_sends: int
    lost: int
    lost_unsent: int
    lost_claimed_sent: int
    unknown: int
    unknown_sent: int
    retries: int
    sandbox_sends: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        """Whether every run of the campaign ended ``completed``."""
        return bool(self.runs) and all(r["status"] == "completed" for r in self.runs)


def verdict(
    state_dir: Path, sends: list[dict[str, Any]], expected: int, senders: tuple[str, ...]
) -> Verdict:
    """Compare the ledger (every run in ``state_dir``) with the sandbox's sends."""
    ours = [s for s in sends if s.get("sessionId") in senders]
    per_to = Counter(str(s["to"]) for s in ours)
    engine = open_ledger(f"sqlite:///{state_dir / 'campaign.db'}")
    try:
        with engine.connect() as conn:
            runs = [
                dict(r._mapping)
                for r in conn.execute(
                    select(runs_table.c.id, runs_table.c.status, runs_table.c.planned_count)
                )
            ]
            rows = conn.execute(
                select(deliveries.c.to, deliveries.c.state, deliveries.c.attempts)
            ).all()
    finally:
        engine.dispose()
    counts = Counter(str(state) for _to, state, _a in rows)
    best: dict[str, str] = {}  # per recipient: a sent state wins, then a final one
    for to, state, _attempts in rows:
        prev = best.get(to)
        if (
            prev is None
            or state in SENT_STATES
            or (state in DONE_STATES and prev not in SENT_STATES)
        ):
            best[to] = state
    unsent_open = sum(
        1 for to, state in best.items() if state not in DONE_STATES and per_to[to] == 0
    )
    missing = max(0, expected - len(best))  # recipients with no ledger row at all
    missing_unsent = max(0, missing - sum(1 for to in per_to if to not in best))
    claimed = sum(1 for to, state in best.items() if state in SENT_STATES and per_to[to] == 0)
    unknown_rows = [to for to, state, _a in rows if state == "unknown"]
    return Verdict(
        runs=[{k: (str(v) if k == "status" else v) for k, v in r.items()} for r in runs],
        counts=dict(counts),
        duplicates=sum(1 for n in per_to.values() if n > 1),
        extra_sends=sum(n - 1 for n in per_to.values() if n > 1),
        lost=unsent_open + missing_unsent + claimed,
        lost_unsent=unsent_open + missing_unsent,
        lost_claimed_sent=claimed,
        unknown=len(unknown_rows),
        unknown_sent=sum(1 for to in unknown_rows if per_to[to] > 0),
        retries=sum(max(0, int(a) - 1) for _to, _s, a in rows),
        sandbox_sends=len(ours),
    )


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


def kill_moments(rng: random.Random, kills: int, deliveries: int) -> list[tuple[str, float]]:
    """``kills`` seeded moments: ("delay", seconds after start) or ("sends", new sends)."""
    span = max(2, int(1.6 * deliveries / kills))  # on average ~80 % of the run is covered
    moments: list[tuple[str, float]] = []
    for _ in range(kills):
        if rng.random() < 0.25:
            moments.append(("delay", rng.uniform(0.2, 4.0)))
        else:
            moments.append(("sends", float(rng.randint(1, span))))
    return moments


def wait_for_moment(
    child: subprocess.Popen[bytes],
    moment: tuple[str, float],
    sendlog: SendLog,
    rng: random.Random,
    *,
    limit_s: float = 180.0,
) -> bool:
    """Wait for the kill moment; False when the process ended by itself first."""
    kind, amount = moment
    start = time.monotonic()
    base = len(sendlog.sends)
    while child.poll() is None:
        waited = time.monotonic() - start
        if kind == "delay" and waited >= amount:
            return True
        if kind == "sends" and sendlog.refresh() - base >= amount:
            time.sleep(rng.uniform(0.0, 0.3))
            return child.poll() is None
        if waited > limit_s:
            log(f"  no kill moment after {limit_s:.0f} s: killing anyway")
            return True
        time.sleep(0.02)
    return False


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
        "receiver": "stable port+token" if args.stable_receiver else "new port+token each launch",
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
        help="one receiver port and webhook token for every launch (default: port 0 and a "
        "random token per process, both new at each launch)",
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
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
