"""What the benchmark scripts share (``from _harness import ...``: a script's own folder is
first on ``sys.path``); no script imports another.

- output: :func:`log` (progress on stderr), :func:`emit` (one JSON line on stdout),
  :func:`peak_rss_mb` (this process's peak resident memory);
- the sandbox in another process (own process group): :func:`start_sandbox`,
  :func:`stop_process`, :func:`create_sessions`, :func:`sandbox_sends`, :class:`SendLog`
  (its accepted sends, fetched incrementally), :data:`QUIET` (the reliability figures');
- the ledger: :func:`store_text_run` stores a one-step text run without planning;
- ``campaign run``: :func:`write_project`, :func:`campaign_env`, :func:`spawn_run`,
  :func:`kill_group`, :func:`kill_moments` and :func:`wait_for_moment` (seeded kills);
  :func:`verdict`: duplicates, losses and unknowns of a campaign's runs, from its ledger
  and the sandbox's sends.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger

# httpx, SQLAlchemy and the scheduler are imported where they are used: a script that only
# needs the output helpers (plan_1m.py's children measure their peak memory) loads none.

ROOT = Path(__file__).resolve().parents[1]
#: The API key of the benchmarks' sandboxes.
KEY = "bench-key-0123456789"
#: The text of :func:`store_text_run`'s deliveries.
TEXT = "Olá {i}! Sua oferta exclusiva chegou: 20% de desconto até domingo. Responda SAIR."

#: The sandbox of the reliability figures: no receipts or replies; webhook retries 1, 2, 4,
#: ... 32 s apart (the real service: 5 ... 160 s), so that, as with the real service, events
#: for sends in flight at a kill are still being retried when the next process listens.
QUIET = {
    "webhook_retry_base_s": 1.0,
    "seed": 1,
    "auto_connect": True,
    "delivered_rate": 0.0,
    "read_rate": 0.0,
    "reply_rate": 0.0,
    "recipient_delay_ms": [0, 0],
}

# --------------------------------------------------------------------------- output


def log(message: str) -> None:
    """Progress on stderr (stdout carries only the JSON lines)."""
    print(message, file=sys.stderr, flush=True)


def median_ms(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Call ``fn`` once to warm (imports, the engine's pool, the database's cache), then
    ``repeat`` times: the median, fastest and slowest call in ms, and ``repeat``."""
    fn()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1000)
    return {"value": round(statistics.median(times), 1), "min_ms": round(min(times), 1),
            "max_ms": round(max(times), 1), "repeat": repeat}


def emit(line: dict[str, Any]) -> None:
    """One figure (or note) as one JSON line on stdout."""
    print(json.dumps(line), flush=True)


def peak_rss_mb() -> float:
    """The peak resident memory of this process so far, in MiB (Linux: ``ru_maxrss`` KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# --------------------------------------------------------------------------- the sandbox

SANDBOX_CODE = """
import json, sys, uvicorn
from scheduler.sandbox import SandboxConfig, create_app
config = SandboxConfig(api_key=sys.argv[2], **json.loads(sys.argv[3]))
uvicorn.run(create_app(config), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False)
"""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_sandbox(
    config: dict[str, Any], *, key: str = KEY, code: str = SANDBOX_CODE
) -> tuple[subprocess.Popen[bytes], str]:
    """Serve the sandbox with ``config`` in another process (own process group); ``code``:
    the program that serves it (``python -c code PORT KEY CONFIG``; a benchmark may wrap
    the sandbox's app).

    Returns the process and its base URL once ``/sandbox/health`` answers.
    """
    import httpx

    port = free_port()
    cmd = [sys.executable, "-c", code, str(port), key, json.dumps(config)]
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
    import httpx

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
    import httpx

    with httpx.Client(base_url=base_url, timeout=60, trust_env=False) as http:
        response = http.get("/sandbox/sends", params={"since": since})
        response.raise_for_status()
        data = response.json()
    return data["sends"] if isinstance(data, dict) else data


class SendLog:
    """The sandbox's accepted sends, fetched incrementally (``?since=``)."""

    def __init__(self, base_url: str) -> None:
        import httpx

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


# --------------------------------------------------------------------------- the ledger


def number(i: int) -> str:
    """The recipient of delivery ``i`` (a Brazilian mobile number)."""
    return f"55119{i:08d}"


def store_text_run(
    ledger: Ledger, deliveries: int, senders: list[str], *, rate: str, name: str, start: datetime
) -> int:
    """A stored run of ``deliveries`` one-step text deliveries over ``senders``; its id."""
    from scheduler.service.requests import SEND_KINDS

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
            "path": SEND_KINDS["text"].path,
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


# --------------------------------------------------------------------------- campaign run


def write_project(
    root: Path, recipients: int, *, rate: str, senders: tuple[str, ...], name: str
) -> Path:
    """A project folder (campaigns/, data/, templates/) with one text campaign; its file."""
    from scheduler.sandbox.testing import write_text_project

    return write_text_project(
        root,
        recipients,
        rate=rate,
        senders=senders,
        name=name,
        text="Oi {{ nome }}, sua oferta chegou!",
    )


def campaign_env(base_url: str, workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of ``campaign``: the sandbox, a private state folder, no config file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(
        CAMPAIGN_BASE_URL=base_url,
        CAMPAIGN_API_KEY=KEY,
        CAMPAIGN_STATE_DIR=str(workdir / "state"),
        # no CAMPAIGN_RECEIVER_PORT: the receiver's port and token are picked once and kept
        # in the state folder, as for a user, so events retried after a kill can land
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


def run_to_end(
    path: Path, env: dict[str, str], workdir: Path, base_url: str, *, timeout: float
) -> tuple[int | None, float, list[dict[str, Any]]]:
    """``campaign run path`` to its end (killed after ``timeout`` s: a run that does not
    finish is a result, exit code None), logging into ``workdir/campaign.log``; its exit
    code, wall seconds and every send the sandbox at ``base_url`` took."""
    wall0 = time.monotonic()
    with (workdir / "campaign.log").open("ab") as logfile:
        child = spawn_run(path, env, logfile)
        try:
            exit_code: int | None = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            exit_code = None
        finally:  # not finished in time, or the benchmark interrupted: no run left behind
            if child.poll() is None:
                kill_group(child)
    wall = time.monotonic() - wall0
    sendlog = SendLog(base_url)
    try:
        sendlog.refresh()
    finally:
        sendlog.close()
    return exit_code, wall, sendlog.sends


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


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL ``proc``'s whole process group and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


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

    @property
    def completed(self) -> bool:
        """Whether every run of the campaign ended ``completed``."""
        return bool(self.runs) and all(r["status"] == "completed" for r in self.runs)


def verdict(
    state_dir: Path, sends: list[dict[str, Any]], expected: int, senders: tuple[str, ...]
) -> Verdict:
    """Compare the ledger (every run in ``state_dir``) with the sandbox's sends."""
    from sqlalchemy import select

    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.queries.tables import deliveries
    from scheduler.ledger.queries.tables import runs as runs_table
    from scheduler.ledger.states import DONE_STATES, SENT_STATES

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
