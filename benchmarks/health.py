"""Figure H1: a sender in trouble, with the health rules on and off (issue 22).

A real ``campaign run`` (a project in a temporary folder, the sandbox in ANOTHER process on
127.0.0.1, SQLite ledger) sends a text to ``--deliveries`` people through five senders at
``--rate`` each, no jitter. The sandbox plays one number's trouble with its seeded
per-session rules (scheduler/sandbox/README.md, "Senders in trouble"): s3 gets a
rate-limit storm (``--storm-after`` sends, then ``--storm-429s`` answers 429 with
``Retry-After: 1``), and is logged out (``connection.status`` ``logged_out``, later sends
409) once it has made ``--logout-sends`` sends (within ``--logout-window`` seconds when
given): a number pushed on after its rate limits is the one that gets banned.

Each round runs the campaign twice, once with ``[senders] health = true`` and once with
``health = false`` in the project's ``config.toml`` (the rules then only score; the hold
on a ``connection.status`` logout is part of following the sessions and stays), in
alternating order. A small ASGI wrapper around the sandbox in its process records every
send request (time, session, status: accepted or not), so refused attempts count too.

Reported per mode, medians of the rounds with min-max (one JSON line each, figure
``H1-on`` / ``H1-off``, ``value`` = attempts through s3 after its first 429):
``attempts_after_429`` (requests through s3 from the first 429 of the storm to the end:
429s, 409s and accepted), ``accepted_after_429``, ``logged_out`` (rounds where the
sandbox logged s3 out), ``attempts_after_logout`` (requests through s3 after the send that
logged it out: each one a 409), ``slowdown_s`` (from the first 429 to the ledger's first
``throttled`` change of s3: the health rules' slow-down; none with health off),
``wall_s`` (the ``campaign run`` process), ``duplicates`` and ``lost`` (harness verdict:
ledger against the sandbox's sends). ``--quick``: 300 deliveries, one round (default:
600, three rounds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _harness import (
    KEY,
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

SENDERS = ("s1", "s2", "s3", "s4", "s5")
TROUBLED = "s3"

#: The sandbox of the harness, wrapped: every send request is recorded (arrival time,
#: session, answer status) and listed at ``GET /bench/attempts``.
SANDBOX_CODE = """
import json, sys, time, uvicorn
from scheduler.sandbox import SandboxConfig, create_app
inner = create_app(SandboxConfig(api_key=sys.argv[2], **json.loads(sys.argv[3])))
attempts = []

async def app(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == "/bench/attempts":
        body = json.dumps(attempts).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    if scope["type"] != "http" or "/messages/send" not in scope["path"]:
        await inner(scope, receive, send)
        return
    at, held = time.time(), []
    while True:
        message = await receive()
        held.append(message)
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    try:
        session = json.loads(b"".join(m.get("body", b"") for m in held)).get("sessionId")
    except (ValueError, AttributeError):
        session = None
    record = {"at": at, "session": session, "status": None}
    attempts.append(record)

    async def replay():
        return held.pop(0) if held else await receive()

    async def watch(message):
        if message["type"] == "http.response.start":
            record["status"] = message["status"]
        await send(message)

    await inner(scope, replay, watch)

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False)
"""


def start_recording_sandbox(config: dict[str, Any]) -> tuple[subprocess.Popen[bytes], str]:
    """The wrapped sandbox in another process (own process group), once it answers."""
    return start_sandbox(config, key=KEY, code=SANDBOX_CODE)


def _get(base_url: str, path: str) -> Any:
    import httpx

    with httpx.Client(base_url=base_url, timeout=60, trust_env=False) as http:
        response = http.get(path)
        response.raise_for_status()
        return response.json()


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _changes(state_dir: Path) -> list[tuple[float, str, str | None]]:
    """s3's state changes from the ledger: (epoch seconds, to state, reason)."""
    from scheduler.ledger import access
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.queries import sender_profiles as spq

    engine = open_ledger(f"sqlite:///{state_dir / 'campaign.db'}")
    try:
        with access.read(engine, "read s3's history") as conn:
            found = spq.history(conn, TROUBLED)
    finally:
        engine.dispose()
    out = []
    for change in sorted(found, key=lambda c: c.id):
        at = change.at if change.at.tzinfo else change.at.replace(tzinfo=UTC)
        out.append((at.timestamp(), change.to_state, change.reason))
    return out


def sandbox_config(args: argparse.Namespace) -> dict[str, Any]:
    """The sandbox's settings: quiet recipients, status events on, s3's trouble."""
    logout: dict[str, Any] = {"sends": args.logout_sends}
    if args.logout_window:
        logout["window_s"] = args.logout_window
    return {
        **QUIET,
        "session_status_events": True,
        "rate_limit_storm": {
            TROUBLED: {
                "after_sends": args.storm_after,
                "for_requests": args.storm_429s,
                "retry_after_s": 1,
            }
        },
        "logout_after": {TROUBLED: logout},
    }


def one_run(args: argparse.Namespace, health: bool) -> dict[str, Any]:
    """One campaign run with the health rules on or off; its measures."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-h1-"))
    proc, base_url = start_recording_sandbox(sandbox_config(args))
    try:
        create_sessions(base_url, list(SENDERS))
        root = workdir / "project"
        path = write_project(root, args.deliveries, rate=args.rate, senders=SENDERS, name="saude")
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text.replace(f'rate = "{args.rate}"\n', f'rate = "{args.rate}"\njitter = "0"\n'),
            encoding="utf-8",
        )
        (root / "config.toml").write_text(
            f"[senders]\nhealth = {'true' if health else 'false'}\n", encoding="utf-8"
        )
        env = campaign_env(base_url, workdir)
        log(f"health {'on' if health else 'off'}: campaign run of {args.deliveries} …")
        exit_code, wall, sends = run_to_end(path, env, workdir, base_url, timeout=args.timeout)
        attempts = [a for a in _get(base_url, "/bench/attempts") if a["session"] == TROUBLED]
        trouble = _get(base_url, "/sandbox/trouble").get(TROUBLED, {})
        result = verdict(workdir / "state", sends, args.deliveries, SENDERS)
        changes = _changes(workdir / "state")
        output = (workdir / "campaign.log").read_bytes()[-2000:].decode("utf-8", "replace")
    finally:
        stop_process(proc)
        shutil.rmtree(workdir, ignore_errors=True)

    storms = trouble.get("storms") or []
    first_429 = _epoch(storms[0]["startedAt"]) if storms else None
    logged_out = _epoch(trouble["loggedOutAt"]) if trouble.get("loggedOutAt") else None
    after_429 = [a for a in attempts if first_429 is not None and a["at"] >= first_429 - 0.01]
    throttled = [at for at, state, _why in changes if state == "throttled"]
    line = {
        "health": health,
        "completed": exit_code == 0 and result.completed,
        "attempts_after_429": len(after_429) if first_429 is not None else None,
        "accepted_after_429": sum(1 for a in after_429 if a["status"] == 200),
        "answered_429": sum(1 for a in attempts if a["status"] == 429),
        "logged_out": logged_out is not None,
        "logged_out_after_429_s": round(logged_out - first_429, 2)
        if logged_out is not None and first_429 is not None
        else None,
        # the send that logged s3 out is accepted (its arrival may be stamped a moment
        # after the sandbox's millisecond loggedOutAt); every request after it is refused
        "attempts_after_logout": sum(
            1
            for a in attempts
            if (a["status"] != 200 and a["at"] > logged_out - 0.01) or a["at"] > logged_out + 0.01
        )
        if logged_out is not None
        else None,
        "slowdown_s": round(throttled[0] - first_429, 2)
        if throttled and first_429 is not None
        else None,
        "s3_sends": trouble.get("accepted"),
        "s3_attempts": [
            [round(a["at"] - first_429, 2) if first_429 else None, a["status"]]
            for a in attempts
            if first_429 is None or a["at"] >= first_429 - 1.0
        ],
        "s3_changes": [
            [round(at - first_429, 2) if first_429 else None, state, why]
            for at, state, why in changes
        ],
        "wall_s": round(wall, 1),
        "duplicates": result.duplicates,
        "lost": result.lost,
        "counts": result.counts,
    }
    log(
        f"  exit {exit_code} after {wall:.1f} s; s3 attempts after the first 429 "
        f"{line['attempts_after_429']}, logged out {line['logged_out']}, slow-down "
        f"{line['slowdown_s']} s; duplicates {result.duplicates}, lost {result.lost}"
    )
    if exit_code != 0 or result.lost or result.duplicates:
        log(f"  last output of campaign run:\n{output}")
    return line


def _spread(values: list[float | None]) -> dict[str, Any]:
    """Median and min-max of the values present (None: the event never happened)."""
    found = [v for v in values if v is not None]
    if not found:
        return {"median": None, "min": None, "max": None, "of": 0}
    return {
        "median": statistics.median(found),
        "min": min(found),
        "max": max(found),
        "of": len(found),
    }


def main() -> None:
    """Parse the flags, run the rounds (health on and off in alternating order), print
    one line per run and one summary line per mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 deliveries, one round")
    parser.add_argument("--deliveries", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--modes", default="on,off", help="health on, off or both")
    parser.add_argument("--rate", default="2/s", help="pace of each of the 5 senders")
    parser.add_argument("--storm-after", type=int, default=10, help="s3's sends before the storm")
    parser.add_argument("--storm-429s", type=int, default=6, help="429s in s3's storm")
    parser.add_argument(
        "--logout-sends", type=int, default=13, help="s3's sends before it is logged out"
    )
    parser.add_argument(
        "--logout-window",
        type=float,
        default=0.0,
        help="within this many seconds (0: counted since the sandbox started)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds a run may take before it counts as not completed",
    )
    args = parser.parse_args()
    args.deliveries = args.deliveries or (300 if args.quick else 600)
    args.rounds = args.rounds or (1 if args.quick else 3)
    load_before = os.getloadavg()
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for round_ in range(args.rounds):
        order = (True, False) if round_ % 2 == 0 else (False, True)
        modes = {m.strip() == "on" for m in args.modes.split(",")}
        for health in (h for h in order if h in modes):
            line = one_run(args, health)
            runs[health].append(line)
            emit({"figure": "H1-run", "round": round_ + 1, **line})
    load_after = os.getloadavg()
    for health, lines in runs.items():
        if not lines:
            continue
        emit(
            {
                "figure": f"H1-{'on' if health else 'off'}",
                "value": _spread([x["attempts_after_429"] for x in lines])["median"],
                "unit": "attempts through s3 after its first 429",
                "rounds": len(lines),
                "completed": sum(1 for x in lines if x["completed"]),
                "logged_out": sum(1 for x in lines if x["logged_out"]),
                **{
                    name: _spread([x[name] for x in lines])
                    for name in (
                        "attempts_after_429",
                        "accepted_after_429",
                        "answered_429",
                        "attempts_after_logout",
                        "logged_out_after_429_s",
                        "slowdown_s",
                        "wall_s",
                        "duplicates",
                        "lost",
                    )
                },
                "deliveries": args.deliveries,
                "rate_per_sender": args.rate,
                "storm": f"after {args.storm_after} sends, {args.storm_429s} x 429",
                "logout": f"after {args.logout_sends} sends"
                + (f" within {args.logout_window:g} s" if args.logout_window else ""),
                "load": [round(x, 2) for x in (*load_before[:1], *load_after[:1])],
            }
        )


if __name__ == "__main__":
    main()
