"""Figure D1 (issue 23): the dashboard's server time on runs of 10,000 and 1,000,000 rows.

Seeds a ledger with two runs (10,000 and 1,000,000 deliveries of a paused WhatsApp run in
mixed states: planned, accepted, sent, delivered, read with replies and opt-outs, failed
with three errors, skipped, unknown, expired; sends spread over five senders, their
events, the replies) by one ``INSERT … SELECT`` per table (SQLite: a recursive counter;
PostgreSQL: ``generate_series``): the deliveries' triggers keep the run's tallies as
they would for a plan and its sends. Then times, in this process (median of
``--repeat``), ``read_run_view`` of each run, ``read_overview``, and ``campaign status``'s
reading (``status_row``, with ``--json``'s rows per sender and without, as the text);
``campaign status RUN --json`` as a command in this process (Typer's runner: the project
opened, the ledger checked, the row read and printed; Python's start and imports left
out) and as a subprocess (wall time: Python's start, imports and the ledger's migration
check included). Once the dashboard exists
(:mod:`scheduler.dashboard`), each page and each live fragment through the real app,
from the ``Server-Timing`` header it sets (:func:`dashboard_timings`); among them the
inbox (``/replies`` under each filter, its live fragment) and one recipient's story
(``/recipients/NUMBER``, a number in both runs), and the search by name (every row is
named ``Pessoa <row, 8 digits>`` in its CSV values: ``q=Pessoa`` matches every row,
``q=Pessoa 00000084`` one number, ``q=Zuleica`` none; a scan of the CSV values before
migration 0023, an index of each number's name keys with 0023, the distinct names' keys
and one narrow row per number since 0026).

Prints JSON lines::

    {"figure": "D1", "what": "read_run_view", "rows": 1000000, "database": "sqlite",
     "value": <ms>, "unit": "ms", "min_ms": ..., "max_ms": ...}

``--database sqlite|postgresql|both`` (PostgreSQL: a throwaway server started by
``scripts/pg-test-server``), ``--rows 10000,1000000``, ``--quick`` (rows 10,000 and
100,000; 3 repeats). ``--url URL`` (one database): time the ledger at ``URL`` instead,
seeding only the runs it lacks (runs ``d1-<rows>`` are reused), so a ledger seeded once
serves many rounds, or two checkouts (a copy each: opening it migrates it; the first
open's time is printed as ``D1-open``); ``--only status``: time ``campaign status``
alone (in process: its reading with and without ``--json``, the command); ``--only
inbox``: the inbox and one recipient's story alone (their readings and pages).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _harness import emit, log, median_ms

REPO = Path(__file__).resolve().parents[1]
#: The moment the benchmark reads its views at: the seeded sends end 10 minutes before.
NOW = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)
SENDERS = ("s1", "s2", "s3", "s4", "s5")
#: Sends are 0.1 s apart (10/s over five senders).
STEP_S = 0.1
#: The recipient whose story is timed: row 84 of every run (read, replied: ``i % 7 == 0``).
STORY_NUMBER = "5511900000084"

# ---------------------------------------------------------------------- seeding


def _states(i: str) -> str:
    """SQL: the state of row ``i`` (by ``i % 100``)."""
    b = f"({i} % 100)"
    return (f"CASE WHEN {b} < 35 THEN 'planned' WHEN {b} < 40 THEN 'accepted' "
            f"WHEN {b} < 55 THEN 'sent' WHEN {b} < 80 THEN 'delivered' "
            f"WHEN {b} < 92 THEN 'read' WHEN {b} < 95 THEN 'failed' "
            f"WHEN {b} < 97 THEN 'skipped' WHEN {b} < 98 THEN 'unknown' ELSE 'expired' END")


def _deliveries_sql(dialect: str, run_id: int, n: int, start: datetime) -> str:
    """One ``INSERT … SELECT`` of ``n`` rows of run ``run_id``."""
    b = "(i % 100)"
    if dialect == "sqlite":
        counter = ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
                   f"WHERE i < {n - 1}) ")
        source = "FROM c"
        first = start.strftime("%Y-%m-%d %H:%M:%S")

        def at(extra_s: str) -> str:
            return (f"strftime('%Y-%m-%d %H:%M:%f', '{first}', '+' || "
                    f"(i * {STEP_S} + {extra_s}) || ' seconds') || '000'")
        worker = "NULL"
        pad = "substr('00000000' || i, -8, 8)"
    else:
        counter = ""
        source = f"FROM generate_series(0, {n - 1}) AS g(i)"
        first = start.isoformat()

        def at(extra_s: str) -> str:
            return (f"(TIMESTAMPTZ '{first}' + make_interval(secs => "
                    f"i * {STEP_S} + {extra_s}))")
        worker = "'w' || (i % 2 + 1)"
        pad = "lpad(i::text, 8, '0')"
    sent = f"{b} >= 35 AND {b} < 95 OR {b} >= 97"
    return (
        f"{counter}INSERT INTO deliveries (run_id, seq, row, step, kind, path, \"to\", "
        "region, payload, variables, state, reason, sender, attempts, last_error, "
        "message_id, message_id_norm, due_at, dispatched_at, accepted_at, sent_at, "
        "delivered_at, read_at, replied_at, failed_at, reply_text, updated_at, worker) "
        f"SELECT {run_id}, i, i + 1, 0, 'text', '/api/v1/messages/send/text', "
        f"'55119' || {pad}, 'BR', "
        f"'{{\"text\": \"Oi\"}}', '{{\"nome\": \"Pessoa ' || {pad} || '\"}}', "
        f"{_states('i')}, "
        f"CASE WHEN {b} BETWEEN 95 AND 96 THEN CASE WHEN i % 2 = 0 THEN "
        "'invalid_number: too short' ELSE 'duplicate' END END, "
        f"CASE WHEN {b} >= 35 AND {b} < 95 OR {b} >= 97 THEN 's' || (i % 5 + 1) END, "
        f"CASE WHEN {b} < 35 OR {b} BETWEEN 95 AND 96 THEN 0 ELSE 1 END, "
        f"CASE WHEN {b} BETWEEN 92 AND 94 THEN CASE i % 3 WHEN 0 THEN 'HTTP 400: invalid "
        "number' WHEN 1 THEN 'HTTP 403: not on WhatsApp' ELSE 'HTTP 500: server error' END "
        "END, "
        f"CASE WHEN {sent} THEN 'WAMID.' || i END, CASE WHEN {sent} THEN 'wamid.' || i END, "
        f"CASE WHEN {b} < 35 THEN {at('0')} END, "
        f"CASE WHEN {sent} THEN {at('0')} END, "
        f"CASE WHEN {b} >= 35 AND {b} < 92 THEN {at('0.3')} END, "
        f"CASE WHEN {b} >= 40 AND {b} < 92 THEN {at('1')} END, "
        f"CASE WHEN {b} >= 55 AND {b} < 92 THEN {at('5')} END, "
        f"CASE WHEN {b} >= 80 AND {b} < 92 THEN {at('60')} END, "
        f"CASE WHEN {b} >= 80 AND {b} < 92 AND i % 7 = 0 THEN {at('120')} END, "
        f"CASE WHEN {b} BETWEEN 92 AND 94 THEN {at('0.3')} END, "
        f"CASE WHEN {b} >= 80 AND {b} < 92 AND i % 7 = 0 THEN 'obrigado' END, "
        f"{at('0')}, CASE WHEN {sent} THEN {worker} END {source}")


def _events_sql(dialect: str, run_id: int, n: int) -> list[str]:
    """Events of the run's newest sends, and its replies (opt-outs among them)."""
    received = "updated_at"
    latest = min(n, 20_000)
    events = (
        "INSERT INTO events (dedupe_key, event, channel, session_id, number, "
        "message_id_norm, occurred_at, received_at, applied_at, result, payload) "
        f"SELECT 'd1-{run_id}-' || id, CASE WHEN read_at IS NOT NULL THEN 'messages.read' "
        "ELSE 'messages.delivered' END, 'whatsapp', sender, \"to\", message_id_norm, "
        f"{received}, {received}, {received}, 'applied', "
        "'{\"event\": \"messages.delivered\", \"data\": {\"status\": \"delivered\"}}' "
        f"FROM deliveries WHERE run_id = {run_id} AND delivered_at IS NOT NULL "
        f"ORDER BY id DESC LIMIT {latest}")
    opt_out = "1" if dialect == "sqlite" else "TRUE"
    keep = "0" if dialect == "sqlite" else "FALSE"
    replies = (
        "INSERT INTO replies (delivery_id, run_id, number, session_id, kind, text, opt_out, "
        f"received_at) SELECT id, run_id, \"to\", sender, 'text', reply_text, "
        f"CASE WHEN id % 10 = 0 THEN {opt_out} ELSE {keep} END, replied_at "
        f"FROM deliveries WHERE run_id = {run_id} AND replied_at IS NOT NULL")
    return [events, replies]


def seeded(url: str, rows: list[int]) -> dict[int, int]:
    """``{rows: run id}`` of the D1 runs the ledger at ``url`` already holds (by name,
    ``d1-<rows>``, with that many deliveries)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(text(
                "SELECT r.campaign_name, r.id, r.planned_count FROM runs r "
                "WHERE r.campaign_name LIKE 'd1-%'")).all()
    finally:
        engine.dispose()
    return {n: int(run_id) for name, run_id, n in found
            if n in rows and name == f"d1-{n}"}


def seed(url: str, rows: list[int]) -> list[int]:
    """Runs of ``rows`` deliveries each in the ledger at ``url`` (migrated); their ids."""
    from sqlalchemy import text

    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.queries import runs as rq
    from scheduler.ledger.runs import Ledger

    try:
        from scheduler.ledger.queries import names
    except ImportError:  # a checkout before migration 0023: no names' table
        names = None  # type: ignore[assignment]
    engine = open_ledger(url)
    ledger = Ledger(engine, clock=lambda: NOW - timedelta(days=1))
    dialect = engine.dialect.name
    ids = []
    for n in rows:
        name = f"d1-{n}"
        run_id = ledger.create_run(
            campaign_name=name, channel="whatsapp", definition_path=f"{name}.toml",
            definition={"name": name, "senders": list(SENDERS), "pace": {"rate": "2/s"},
                        "schedule": {"timezone": "America/Sao_Paulo"},
                        "steps": [{"type": "text"}]},
            delivery_mode="at-most-once", timezone="America/Sao_Paulo", target="sandbox")
        # the sends end 10 minutes before NOW: a paused run, its last minutes quiet
        start = NOW - timedelta(minutes=10) - timedelta(seconds=n * STEP_S)
        began = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(text(_deliveries_sql(dialect, run_id, n, start)))
            for sql in _events_sql(dialect, run_id, n):
                conn.execute(text(sql))
            if names is not None:  # the search by name's tables (0023; 0026), as a plan
                names.fill_from_deliveries(conn, run_id)  # would have filled it
            rq.update_run(conn, run_id, status="paused", planned_count=n,
                          started_at=start, owner_pid=None, heartbeat_at=None,
                          stop_reason="paused by a person")
        if dialect == "postgresql":
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE"))
        log(f"seeded run {run_id}: {n:,} deliveries in {time.perf_counter() - began:.1f} s")
        ids.append(run_id)
    with engine.begin() as conn:  # the senders' profiles: one paused by a person
        for sender in SENDERS:
            state = "paused" if sender == "s3" else "healthy"
            conn.execute(text(
                "INSERT INTO sender_profiles (sender, first_seen_at, last_sent_at, state, "
                "reason, since, warm_day, score, throttle) VALUES (:s, :first, :last, "
                ":state, :reason, :first, 1, 92.5, 1.0)"),
                {"s": sender, "first": NOW - timedelta(days=3), "last": NOW - timedelta(
                    minutes=10), "state": state,
                 "reason": "paused by a person: complaints" if state == "paused" else None})
    engine.dispose()
    return ids


# ---------------------------------------------------------------------- timing


def _project(url: str, folder: Path) -> dict[str, str]:
    """A project folder whose ``campaign`` commands use the ledger at ``url``."""
    (folder / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(CAMPAIGN_DATABASE_URL=url, COLUMNS="80")
    return env


def _status_subprocess(url: str, run_id: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="d1-project-") as folder:
        env = _project(url, Path(folder))
        command = [sys.executable, "-m", "scheduler.cli", "status", str(run_id), "--json"]

        def once() -> None:
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True,
                                  text=True, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(done.stderr)
            json.loads(done.stdout)

        return median_ms(once, max(1, repeat // 2))


def _status_command(url: str, run_id: int, repeat: int) -> dict[str, float]:
    """``campaign status RUN --json`` run in this process by Typer's runner, from a
    project folder whose ledger is ``url``: the whole command but Python's start."""
    from typer.testing import CliRunner

    from scheduler.cli import app

    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="d1-project-") as folder:
        env = _project(url, Path(folder))
        unset = {k: None for k in os.environ if k.startswith("CAMPAIGN_")}
        runner = CliRunner()

        def once() -> None:
            done = runner.invoke(app, ["status", str(run_id), "--json"],
                                 env={**unset, **env}, catch_exceptions=False)
            if done.exit_code != 0:
                raise RuntimeError(done.output)
            json.loads(done.stdout)

        os.chdir(folder)
        try:
            return median_ms(once, repeat)
        finally:
            os.chdir(here)


def in_process(url: str, run_ids: list[int], rows: list[int], repeat: int,
               database: str, *, only: str = "all") -> None:
    """The views and status's reading, timed in this process (``only="status"``:
    ``campaign status``'s alone)."""
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings
    from scheduler.views.overview import read_overview
    from scheduler.views.run_view import read_run_view
    from scheduler.views.status import status_row

    engine = open_ledger(url)
    ledger, settings = Ledger(engine), Settings()
    base = {"figure": "D1", "database": database, "unit": "ms"}
    if only == "inbox":
        _inbox(ledger, settings, run_ids, rows, repeat, base)
        engine.dispose()
        return
    for run_id, n in zip(run_ids, rows, strict=True):
        if only == "all":
            emit({**base, "what": "read_run_view", "rows": n, **median_ms(
                lambda r=run_id: read_run_view(ledger, r, settings=settings, now=NOW),
                repeat)})
        emit({**base, "what": "status_row (campaign status --json, in process)", "rows": n,
              **median_ms(lambda r=run_id: status_row(ledger, r, settings, NOW, width=78),
                        repeat)})
        emit({**base, "what": "status_row (campaign status text, in process)", "rows": n,
              **median_ms(lambda r=run_id: status_row(ledger, r, settings, NOW, width=78,
                                                    sender_counts=False), repeat)})
        emit({**base, "what": "campaign status --json (command, in process)", "rows": n,
              **_status_command(url, run_id, repeat)})
        if only == "all":
            emit({**base, "what": "campaign status --json (subprocess wall)", "rows": n,
                  **_status_subprocess(url, run_id, repeat)})
    if only != "all":
        engine.dispose()
        return
    emit({**base, "what": "read_overview", "rows": sum(rows), **median_ms(
        lambda: read_overview(ledger, settings=settings, now=NOW), repeat)})
    for name, n in _dashboard(ledger, settings, run_ids, rows, repeat):
        emit({**base, **n, "what": name})
    _inbox(ledger, settings, run_ids, rows, repeat, base)
    engine.dispose()


def _inbox(ledger: Any, settings: Any, run_ids: list[int], rows: list[int], repeat: int,
           base: dict[str, Any]) -> None:
    """The inbox and one recipient's story (issue 35): their readings in this process, and
    the pages: ``/replies`` under every filter a person uses and its live fragment, a
    recipient with a reply in both runs (row 84: read, replied), and the search by name
    (a name matching every row, one number, none)."""
    from scheduler.dashboard.app import create_app
    from scheduler.views.inbox import read_inbox
    from scheduler.views.recipient_story import read_story

    total = sum(rows)
    emit({**base, "what": "read_inbox (campaign replies --json's reading)", "rows": total,
          **median_ms(lambda: read_inbox(ledger, now=NOW), repeat)})
    emit({**base, "what": "read_story (campaign recipient --json's reading)",
          "rows": total, **median_ms(lambda: read_story(ledger, STORY_NUMBER, now=NOW),
                                     repeat)})
    paths = {"/replies": total, "/replies?state=to+answer": total,
             f"/replies?run={run_ids[-1]}": rows[-1], "/replies?campaign=d1-10000": total,
             "/replies/fragment": total, f"/recipients/{STORY_NUMBER}": total,
             "/recipients?q=Pessoa": total,
             f"/recipients?q=Pessoa+{STORY_NUMBER[-8:]}": total,
             "/recipients?q=Zuleica": total}
    app = create_app(settings, ledger, clock=lambda: NOW)
    for path, figures in dashboard_timings(app, list(paths), repeat).items():
        kind = "live update" if "fragment" in path else "page"
        emit({**base, "rows": paths[path], **figures,
              "what": f"dashboard {kind} GET {path} (Server-Timing)"})


# ---------------------------------------------------------------------- the dashboard


def dashboard_timings(app: Any, paths: list[str], repeat: int) -> dict[str, dict[str, float]]:
    """THE DASHBOARD'S PAGES AND LIVE UPDATES: ``app`` (the real dashboard,
    :func:`scheduler.dashboard.app.create_app`) served on a loopback port, each of
    ``paths`` requested ``repeat`` times (after one to warm up); the server time is the
    ``Server-Timing: app;dur=<ms>`` header it sets on every answer (median, min, max)."""
    import httpx

    from scheduler.core.httpserver import BackgroundServer

    out: dict[str, dict[str, float]] = {}
    with BackgroundServer(app) as server, httpx.Client(base_url=server.base_url,
                                                       timeout=120) as client:
        for path in paths:
            times = []
            for attempt in range(repeat + 1):
                answer = client.get(path)
                if answer.status_code != 200:
                    raise RuntimeError(f"GET {path}: {answer.status_code}")
                if attempt == 0:
                    continue  # warm
                header = answer.headers.get("server-timing", "")
                times.append(float(header.split("dur=", 1)[1].split(",")[0].split(";")[0]))
            out[path] = {"value": round(statistics.median(times), 1),
                         "min_ms": round(min(times), 1), "max_ms": round(max(times), 1)}
    return out


def _dashboard(ledger: Any, settings: Any, run_ids: list[int], rows: list[int],
               repeat: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each page and live fragment of the dashboard, when it exists."""
    try:
        from scheduler.dashboard.app import create_app
    except ImportError:
        log("no scheduler.dashboard yet: its pages are not timed")
        return
    app = create_app(settings, ledger, clock=lambda: NOW)
    paths = {"/": sum(rows), "/fragment": sum(rows), "/senders": sum(rows)}
    for run_id, n in zip(run_ids, rows, strict=True):
        paths[f"/runs/{run_id}"] = n
        paths[f"/runs/{run_id}/fragment"] = n
    for path, figures in dashboard_timings(app, list(paths), repeat).items():
        kind = "live update" if path.endswith("fragment") else "page"
        yield f"dashboard {kind} GET {path} (Server-Timing)", {"rows": paths[path], **figures}


# ---------------------------------------------------------------------- main


@contextlib.contextmanager
def _postgres() -> Iterator[str]:
    """A throwaway PostgreSQL server and a new database in it."""
    script = REPO / "scripts" / "pg-test-server"
    folder = tempfile.mkdtemp(prefix="d1-pg-")
    try:
        started = subprocess.run(["bash", str(script), "start", folder], check=True,
                                 capture_output=True, text=True)
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(script), "stop", folder], check=False,
                       capture_output=True)


def run_url(url: str, rows: list[int], repeat: int, only: str) -> None:
    """Time the ledger at ``url``, seeding only the D1 runs it lacks (its first open,
    a migration when it is behind, timed as ``D1-open``)."""
    from scheduler.ledger.db import open_ledger

    database = "sqlite" if url.startswith("sqlite") else "postgresql"
    began = time.perf_counter()
    open_ledger(url).dispose()
    emit({"figure": "D1-open", "database": database,
          "value": round(time.perf_counter() - began, 2), "unit": "s"})
    found = seeded(url, rows)
    missing = [n for n in rows if n not in found]
    if missing:
        began = time.perf_counter()
        found.update(zip(missing, seed(url, missing), strict=True))
        emit({"figure": "D1-seed", "database": database, "rows": sum(missing),
              "value": round(time.perf_counter() - began, 1), "unit": "s"})
    in_process(url, [found[n] for n in rows], rows, repeat, database, only=only)


def run_database(database: str, rows: list[int], repeat: int, only: str = "all") -> None:
    """Seed and time one database."""
    with contextlib.ExitStack() as stack:
        if database == "sqlite":
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="d1-"))
            url = f"sqlite:///{folder}/ledger.db"
        else:
            url = stack.enter_context(_postgres())
        began = time.perf_counter()
        run_ids = seed(url, rows)
        emit({"figure": "D1-seed", "database": database, "rows": sum(rows),
              "value": round(time.perf_counter() - began, 1), "unit": "s"})
        in_process(url, run_ids, rows, repeat, database, only=only)


def main(argv: list[str] | None = None) -> int:
    """Seed, time, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"),
                        default="both")
    parser.add_argument("--rows", default="10000,1000000",
                        help="the runs' sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true",
                        help="rows 10,000 and 100,000, 3 repeats")
    parser.add_argument("--url", help="time this ledger (seeded if it lacks the runs)")
    parser.add_argument("--only", choices=("all", "status", "inbox"), default="all",
                        help="status: time campaign status alone; inbox: the inbox and "
                             "the recipient's page alone")
    args = parser.parse_args(argv)
    rows = [10_000, 100_000] if args.quick else [int(r) for r in args.rows.split(",")]
    repeat = 3 if args.quick else args.repeat
    databases = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    if args.url:
        run_url(args.url, rows, repeat, args.only)
    for database in () if args.url else databases:
        run_database(database, rows, repeat, args.only)
    emit({"figure": "D1-context", "cpus": os.cpu_count(),
          "load_avg_1m": round(os.getloadavg()[0], 2)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
