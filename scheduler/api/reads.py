"""What the API's routes read and do: the functions the command line calls, so that the
API's numbers and the CLI's cannot disagree.

- :func:`runs_document`: ``campaign runs --json``;
- :func:`run_document`: ``campaign status --json RUN``;
- :func:`control_run`: ``campaign pause|resume|cancel RUN`` (the request written to the
  ledger; a resumed run is continued by a live worker, never by the API's process: on
  SQLite too, when its one ``campaign serve`` is live);
- :func:`senders_document`: ``campaign senders --json``;
- the suppression list: look a number up, add it (as an opt-out does), remove it;
- :func:`run_events`, :func:`run_replies`, :func:`resend`: a run's newest events and
  replies, its replies alone, its failed or unknown rows queued again.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from scheduler.ledger import access

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings


def runs_document(ledger: Ledger, settings: Settings, now: datetime) -> dict[str, Any]:
    """``campaign runs --json``: the ledger, every run newest first, and the scheduled fires
    that made no run."""
    from scheduler.ledger.db import ledger_label
    from scheduler.ledger.fire_store import FireStore
    from scheduler.views.status import runs_rows

    rows = runs_rows(ledger, settings, now)
    unplanned = FireStore(ledger.engine).unplanned_fires()
    fires = [{"campaign": fire.campaign_name, "fire_time": fire.fire_time.isoformat(),
              "status": status, "reason": reason} for fire, status, reason in unplanned]
    return {"ledger": ledger_label(settings), "runs": rows, "fires_without_run": fires}


def run_document(ledger: Ledger, settings: Settings, run_id: int,
                 now: datetime) -> dict[str, Any]:
    """``campaign status --json RUN``: the run's row, its senders' counts and its A/B test."""
    from scheduler.views.experiment_status import experiment_of_run
    from scheduler.views.status import status_row

    row, _lines = status_row(ledger, run_id, settings, now, width=78, sender_counts=True)
    row["experiment"] = experiment_of_run(ledger.engine, row["run"])
    return row


def control_run(ledger: Ledger, settings: Settings, run_id: int, action: str,
                now: datetime) -> dict[str, Any]:
    """``campaign pause|resume|cancel RUN``: the request written as the command writes it;
    the run's status after it and how many live workers obey."""
    from scheduler.views.workers import served_by_workers

    workers = served_by_workers(ledger, settings.worker_lease_s, now)
    if action == "resume":
        from scheduler.api.starts import live_workers
        from scheduler.usecases.launch import check_target
        from scheduler.wiring import target_value

        check_target(ledger.get_run(run_id), target_value(settings))
        # SQLite's one `campaign serve` takes a resumed run too (the API cannot run it)
        workers = live_workers(ledger, settings, now)
    run = ledger.request(run_id, action, served=workers > 0)
    note = None
    if action == "resume" and not workers and run.status == "paused":
        note = ("no live worker continues it: `campaign serve` (or `campaign resume "
                f"{run_id}`) dispatches it")
    return {"run": run_id, "action": action, "status": run.status,
            "live_workers": workers, "note": note}


def senders_document(ledger: Ledger, settings: Settings, now: datetime) -> dict[str, Any]:
    """``campaign senders --json``: every sender, its state, warm-up and plan limits."""
    from scheduler.ledger.db import ledger_label
    from scheduler.views.senders import senders_view

    view = senders_view(ledger, settings, now)
    return {"ledger": ledger_label(settings), **view.model_dump(mode="json")}


def suppression_of(ledger: Ledger, number: str) -> dict[str, Any] | None:
    """The suppression list's entry for ``number``, None when it is not listed."""
    from scheduler.ledger import suppression_list

    return suppression_list.entry(ledger.engine, number)


def add_suppression(ledger: Ledger, number: str, reason: str | None) -> bool:
    """List ``number`` (source ``api``) and skip its pending rows, as an opt-out does; False
    when it was listed already."""
    return ledger.suppress(number, source="api", reason=reason)


def remove_suppression(ledger: Ledger, number: str) -> bool:
    """Take ``number`` off the list (rows already skipped stay skipped); False when it was
    not listed."""
    from scheduler.ledger import suppression_list

    return suppression_list.remove(ledger.engine, number)


def change_sender(ledger: Ledger, sender: str, action: str, reason: str,
                  now: datetime) -> dict[str, Any]:
    """``campaign senders pause|resume|retire SENDER --reason TEXT``: the same change, in
    the sender's history as the operator's."""
    from scheduler.usecases.sender_control import change_sender as change

    done = change(ledger, sender, action, reason, now)
    return {**done.model_dump(), "sentence": done.sentence()}


def run_events(ledger: Ledger, run_id: int) -> dict[str, Any]:
    """The run's newest webhook events and replies together, newest first (the list of
    ``status --json``'s ``view.events`` and the dashboard's run page)."""
    from scheduler.ledger.run_reads import RunSamples
    from scheduler.views import run_parts as vf

    ledger.get_run(run_id)  # RunNotFound
    with access.snapshot(ledger.engine, f"read the events of run {run_id}") as conn:
        samples = RunSamples(conn)
        found = vf.events(samples.events(run_id), samples.replies(run_id))
    return {"run": run_id, "events": [event.model_dump(mode="json") for event in found]}


def resend(ledger: Ledger, settings: Settings, run_id: int, states: set[str],
           now: datetime) -> dict[str, Any]:
    """``campaign resend RUN --failed/--unknown/--unproven``: those rows queued again, the
    unknown rows' verdicts in words (``unproven``), how many were queued."""
    ledger.get_run(run_id)  # RunNotFound
    lines: list[str] = []
    queued = 0
    if "unproven" in states and "unknown" not in states:
        from scheduler.dispatch.unknowns import judge_run

        verdicts = judge_run(ledger, run_id, now, horizon=settings.retry_horizon())
        zone = str(ledger.options(ledger.get_run(run_id)).timezone)
        lines = list(verdicts.describe(run_id, zone))
        if verdicts.unproven:
            queued += ledger.requeue(run_id, ["unknown"], ids=verdicts.unproven)
    wanted: list[str] = [s for s in ("failed", "unknown") if s in states]
    if wanted:
        queued += ledger.requeue(run_id, wanted)
    return {"run": run_id, "queued": queued, "verdicts": lines,
            "note": f"send them by resuming the run (POST /api/v1/runs/{run_id}/resume)"}


def run_replies(ledger: Ledger, run_id: int, limit: int) -> dict[str, Any]:
    """The run's newest ``limit`` replies, newest first, each with its recipient's name."""
    from scheduler.ledger.inbox_reads import InboxReads
    from scheduler.views import run_parts as vf

    ledger.get_run(run_id)  # RunNotFound
    with access.snapshot(ledger.engine, f"read the replies of run {run_id}") as conn:
        found = InboxReads(conn).run_replies(run_id, limit)
    return {"run": run_id, "replies": [
        {"id": r.id, "event": r.event, "at": r.at.isoformat() if r.at else None,
         "number": r.number, "text": r.payload, "recipient": vf.recipient(r.variables)}
        for r in found]}
