"""What the dashboard's buttons do, through the ledger's own calls (as the commands do):

- pause / cancel: ``ledger.request`` (the process dispatching the run obeys within 2 s;
  a run nobody holds is cancelled at once);
- resume: ``ledger.request``, then, when no live ``campaign serve`` worker and no process
  holds the run, a ``campaign resume N`` child started detached (its own session, so it
  outlives the dashboard), logging to ``<state>/logs/``;
- send again: ``ledger.requeue`` of the failed rows, or of the unknown rows the service
  did not take (``judge_run``'s *unproven*: safe to send again).

Each returns a :class:`Notice`: what was done, in words, for the run's page.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Literal

from scheduler.core.timeutil import monotonic
from scheduler.dashboard.errors import PageError
from scheduler.dashboard.web import Dashboard, Notice
from scheduler.ledger.lease import owner_alive
from scheduler.ledger.models import Run
from scheduler.ledger.states import FINISHED_RUN_STATUSES

Which = Literal["failed", "unproven"]
#: How long a resume waits to see its child take the run, or fail at once (seconds).
CHILD_SETTLES_S = 5.0


def _workers(dash: Dashboard) -> int:
    from scheduler.views.workers import served_by_workers

    return served_by_workers(dash.ledger, dash.settings.worker_lease_s, dash.clock())


def control(dash: Dashboard, run_id: int, action: Literal["pause", "cancel"]) -> Notice:
    """Ask the run to pause or to cancel (a finished run: :class:`RunStateError`)."""
    workers = _workers(dash)
    run = dash.ledger.request(run_id, action, served=workers > 0)
    if action == "pause":
        return Notice(f"Run {run_id}: pause requested; its sends stop within 2 s "
                      "(a send already on its way finishes).")
    if run.status == "cancelled":
        return Notice(f"Run {run_id} cancelled: nothing more is sent.")
    return Notice(f"Run {run_id}: cancel requested; the process sending it stops within 2 s "
                  "and skips what was not sent.")


def resume(dash: Dashboard, run_id: int) -> Notice:
    """Resume the run: the live workers or its holder continue it, else a started child."""
    from scheduler.usecases.launch import check_target
    from scheduler.wiring import target_value

    run = dash.ledger.get_run(run_id)
    if run.status not in FINISHED_RUN_STATUSES:
        check_target(run, target_value(dash.settings))  # another service: refused, said why
    workers = _workers(dash)
    dash.ledger.request(run_id, "resume", served=workers > 0)
    if workers:
        return Notice(f"Run {run_id} resumed: the {workers} live `campaign serve` worker(s) "
                      "continue it.")
    run = dash.ledger.get_run(run_id)
    if owner_alive(run, dash.clock()):
        return Notice(f"Run {run_id} resumed in the process that holds it "
                      f"(process {run.owner_pid} on {run.owner_host}).")
    return start_resume(dash, run_id)


def log_folder(dash: Dashboard) -> Path:
    """Where the children's logs go: ``<state folder>/logs`` (a temporary folder when the
    settings name no project)."""
    from scheduler.core.errors import ConfigError

    try:
        folder = dash.settings.state_path() / "logs"
    except ConfigError:
        folder = Path(tempfile.gettempdir()) / "campaign-dashboard-logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _child_env(dash: Dashboard) -> dict[str, str]:
    """This process's environment, with the ledger the dashboard reads (the child must
    continue the same run in the same ledger)."""
    env = dict(os.environ)
    env["CAMPAIGN_DATABASE_URL"] = dash.settings.resolved_database_url()
    env.setdefault("COLUMNS", "100")
    return env


def _tail(path: Path, lines: int = 4) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def start_resume(dash: Dashboard, run_id: int) -> Notice:
    """Start ``campaign resume RUN`` detached, and wait a moment to see it take the run or
    fail at once (then its log's last lines are the error)."""
    stamp = dash.clock().strftime("%Y%m%dT%H%M%S")
    log = log_folder(dash) / f"resume-run-{run_id}-{stamp}.log"
    cwd = dash.settings.project_dir or Path.cwd()
    with open(log, "ab") as out:
        child = subprocess.Popen([sys.executable, "-m", "scheduler", "resume", str(run_id)],
                                 cwd=cwd, env=_child_env(dash), stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    threading.Thread(target=child.wait, daemon=True, name=f"resume-{run_id}").start()
    deadline = monotonic() + CHILD_SETTLES_S
    while monotonic() < deadline:
        code = child.poll()
        if code is not None and code != 0:
            raise PageError(409, f"`campaign resume {run_id}` stopped at once: "
                                 f"{_tail(log) or f'exit code {code}'} (log: {log})",
                            back=f"/runs/{run_id}")
        run: Run = dash.ledger.get_run(run_id)
        if code == 0 or run.owner_pid == child.pid or run.status in FINISHED_RUN_STATUSES:
            break
        time.sleep(0.1)
    return Notice(f"Run {run_id} resumed: `campaign resume {run_id}` continues it in "
                  f"process {child.pid} (log: {log}).")


def resend_count(dash: Dashboard, run_id: int, which: Which) -> tuple[int, list[int]]:
    """How many rows sending ``which`` again would queue, and (unproven) their ids."""
    if which == "failed":
        return dash.ledger.counts(run_id).get("failed", 0), []
    from scheduler.dispatch.unknowns import judge_run

    verdicts = judge_run(dash.ledger, run_id, dash.clock(),
                         horizon=dash.settings.retry_horizon())
    return len(verdicts.unproven), list(verdicts.unproven)


def resend(dash: Dashboard, run_id: int, which: Which) -> Notice:
    """Queue the failed (or unproven) rows again; the run becomes paused, to be resumed."""
    n, ids = resend_count(dash, run_id, which)
    if not n:
        raise PageError(409, f"Run {run_id} has no {which} deliveries to send again.",
                        back=f"/runs/{run_id}")
    if which == "failed":
        queued = dash.ledger.requeue(run_id, ["failed"])
    else:
        queued = dash.ledger.requeue(run_id, ["unknown"], ids=ids)
    rows = "delivery" if queued == 1 else "deliveries"
    return Notice(f"Run {run_id}: {queued:,} {which} {rows} queued again (with their later "
                  "steps). The run is paused: press Resume to send them.", kind="warn")
