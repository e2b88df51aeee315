"""``campaign run / resume / pause / cancel / resend / status / runs``."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core import display, time_words
from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:  # the app's modules (and rich, the ledger) are imported when a command runs
    from rich.console import Console

    from scheduler.usecases.launch import EditChoice
    from scheduler.views.unserved import Unserved


def _console() -> Console:
    """The terminal of a command (rich's console is imported when one runs)."""
    from rich.console import Console

    return Console()


def _parse_start(start: str | None) -> datetime | None:
    if start is None:
        return None
    try:
        moment = datetime.fromisoformat(start)
    except ValueError:
        raise SchedulerError(f"--start {start!r}: expected an ISO date-time such as "
                             "2026-12-01T09:00-03:00") from None
    if moment.tzinfo is None:
        raise SchedulerError(f"--start {start!r}: add a UTC offset, e.g. 2026-12-01T09:00-03:00")
    return moment


def _edit_choice(apply_changes: bool, replan: bool, as_planned: bool) -> EditChoice | None:
    flags: tuple[tuple[EditChoice, bool], ...] = (
        ("apply-changes", apply_changes), ("replan", replan), ("as-planned", as_planned))
    chosen = [name for name, on in flags if on]
    if len(chosen) > 1:
        raise SchedulerError("choose one of --apply-changes, --replan and --as-planned")
    return chosen[0] if chosen else None


def run_command(
    file: Path = typer.Argument(..., help="Campaign definition (TOML)."),
    rehearse: bool = typer.Option(False, "--rehearse", help="Run against the embedded sandbox "
                                  "on a simulated clock and print the timeline; sends nothing."),
    start: str | None = typer.Option(None, "--start", help="Rehearsal start (ISO, with offset)."),
    replies: Path | None = typer.Option(None, "--replies", help="With --rehearse: who answers "
                                        "what (JSON: {number: [{\"text\": \"1\"} | null, "
                                        "...]}, the sandbox's whatsapp_replies_by_number); "
                                        "else replies are drawn at [replies] expected_rate."),
    new_run: bool = typer.Option(False, "--new-run", help="Run a one-off campaign that "
                                 "already ran again (its earlier recipients are skipped)."),
    include_previous: bool = typer.Option(False, "--include-previous", help="With --new-run: "
                                          "send to numbers that received it before too."),
    apply_changes: bool = typer.Option(False, "--apply-changes", help="The file's pacing, "
                                       "window, schedule or senders changed: apply them to "
                                       "the deliveries not yet sent."),
    replan: bool = typer.Option(False, "--replan", help="The file changed: plan again what is "
                                "not yet sent (nothing sent is sent again)."),
    as_planned: bool = typer.Option(False, "--as-planned", help="The file changed: continue "
                                    "with the plan as it was."),
) -> None:
    """Plan, store and dispatch a campaign now, with a progress bar (Ctrl-C pauses)."""
    from scheduler.usecases.launch import launch_run

    console = _console()
    if rehearse:
        from scheduler.usecases.rehearsal import print_rehearsal, rehearse_campaign

        print_rehearsal(rehearse_campaign(file, start=_parse_start(start), replies=replies),
                        console)
        return
    if replies is not None:
        raise SchedulerError("--replies goes with --rehearse")
    if include_previous and not new_run:
        raise SchedulerError("--include-previous goes with --new-run")
    launch_run(file, console, new_run=new_run, include_previous=include_previous,
               edit_choice=_edit_choice(apply_changes, replan, as_planned))


def _control(action: str, run_id: int) -> None:
    from scheduler.core.timeutil import utcnow
    from scheduler.views.workers import served_by_workers
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    workers = served_by_workers(ledger, settings.worker_lease_s, utcnow())
    run = ledger.request(run_id, action, served=workers > 0)
    _console().print(f"run {run_id}: {action} requested (status {run.status})"
                  + (f"; {workers} live worker(s) obey within 2 s" if workers else ""))


def pause_command(run_id: int = typer.Argument(..., help="Run id (see `campaign runs`).")) -> None:
    """Pause a run; a process dispatching it stops within 2 s, in-flight sends finish."""
    _control("pause", run_id)


def cancel_command(run_id: int = typer.Argument(..., help="Run id.")) -> None:
    """Cancel a run: nothing more is sent; pending deliveries become skipped."""
    _control("cancel", run_id)


def resume_command(run_id: int = typer.Argument(..., help="Run id.")) -> None:
    """Resume a paused or interrupted run; continues it here unless a process holds it."""
    import asyncio

    from scheduler.ledger.exceptions import RunLocked
    from scheduler.ledger.states import describe_target
    from scheduler.usecases.foreground import describe, run_foreground
    from scheduler.usecases.launch import check_target
    from scheduler.wiring import open_project, target_value

    settings, ledger = open_project()
    target = target_value(settings)
    run = ledger.get_run(run_id)
    check_target(run, target)
    service = settings.service_endpoint()
    # the embedded sandbox makes its own sessions; SMS and voice send from the account
    from scheduler.dispatch.channels import from_sessions, places_session_calls

    if service is not None and from_sessions(run.channel):
        from scheduler.service.sender_check import verify_senders

        senders = list(ledger.options(run).senders)
        verify_senders(*service, senders, timeout_s=settings.http_timeout_s,
                       calls=places_session_calls(run.channel))
    from scheduler.core.timeutil import utcnow
    from scheduler.views.workers import served_by_workers

    workers = served_by_workers(ledger, settings.worker_lease_s, utcnow())
    ledger.request(run_id, "resume", served=workers > 0)
    console = _console()
    if workers:
        console.print(f"run {run_id} resumed: the {workers} live `campaign serve` worker(s) "
                      "continue it")
        return
    try:
        ledger.acquire(run_id)
    except RunLocked:
        console.print(f"run {run_id} resumed in the process that holds it")
        return
    ledger.release(run_id)
    console.print(f"run {run_id} → {describe_target(target)}")
    result = asyncio.run(run_foreground(settings, ledger, ledger.get_run(run_id), console))
    describe(result, console, ledger, horizon=settings.retry_horizon())


def resend_command(
    run_id: int = typer.Argument(..., help="Run id."),
    failed: bool = typer.Option(False, "--failed", help="Queue failed deliveries again."),
    unknown: bool = typer.Option(False, "--unknown", help="Queue unknown (maybe sent) "
                                 "deliveries again: they may reach someone twice."),
    unproven: bool = typer.Option(False, "--unproven", help="Queue the unknown deliveries "
                                  "the service did not take (no proof although a receiver "
                                  "listened without a break through all its retries): "
                                  "safe to send. The rest stay unknowable, and status "
                                  "says why."),
) -> None:
    """Queue failed and/or unknown deliveries of a run again, explicitly."""
    from scheduler.core.timeutil import utcnow
    from scheduler.dispatch.unknowns import judge_run
    from scheduler.wiring import open_project

    if not (failed or unknown or unproven):
        raise SchedulerError("say which deliveries to send again: --failed, --unproven or "
                             "--unknown")
    settings, ledger = open_project()
    console = _console()
    n = 0
    if unproven and not unknown:
        verdicts = judge_run(ledger, run_id, utcnow(), horizon=settings.retry_horizon())
        zone = str(ledger.options(ledger.get_run(run_id)).timezone)
        for line in verdicts.describe(run_id, zone):
            console.print(line, highlight=False)
        if verdicts.unproven:
            n += ledger.requeue(run_id, ["unknown"], ids=verdicts.unproven)
    states = [s for s, wanted in (("failed", failed), ("unknown", unknown)) if wanted]
    if states:
        n += ledger.requeue(run_id, states)
    console.print(f"run {run_id}: {n} deliveries queued again; "
                  f"send them with `campaign resume {run_id}`")


def _packed(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by `` · `` into lines of at most ``width`` (a part is never cut)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += f" · {part}"
        else:
            lines.append(part)
    return lines


def _times_line(row: dict[str, Any]) -> str:
    """When the run started and finished (or was created), in the campaign's zone."""
    zone = row["timezone"]

    def at(key: str) -> str:
        moment = row[key]
        return time_words.local_time(datetime.fromisoformat(moment) if moment else None, zone,
                                  empty="not yet")

    if row["started_at"] is None:
        return f"created {at('created_at')} · not started yet"
    return f"started {at('started_at')} · finished {at('finished_at')}"


def _attempt_lines(row: dict[str, Any], width: int) -> list[str]:
    from scheduler.views.attempts import attempt_lines
    from scheduler.views.run_models import AttemptsView

    if not row.get("attempts"):
        return []
    view = AttemptsView.model_validate(row["attempts"])
    return attempt_lines(view, row["timezone"], width, run_id=row["run"])


def status_command(
    run_id: int | None = typer.Argument(None, help="Run id; the newest run when left out."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """A run's status: deliveries by state, and the channel's outcomes (WhatsApp: sent /
    delivered / read / replied / opted out; SMS: delivered / undelivered, segments, cost;
    voice: answered / not answered, digits pressed)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.views.experiment_status import experiment_of_run
    from scheduler.views.status import status_row
    from scheduler.views.unserved import Unserved
    from scheduler.wiring import open_reader

    console = _console()
    settings, ledger = open_reader()
    # one snapshot: counts, funnel, waits and senders all of the same moment
    row, sender_text = status_row(ledger, run_id, settings, utcnow(),
                                  width=console.width - 2, sender_counts=as_json)
    row["experiment"] = experiment_of_run(ledger.engine, row["run"])  # A/B variants
    unserved = Unserved.model_validate(row["unserved"]) if row["unserved"] else None
    if as_json:
        typer.echo(json.dumps(row, ensure_ascii=False, indent=2))
        return
    _print_head(console, row, unserved)
    _print_lines(console, row, sender_text)


def _print_head(console: Console, row: dict[str, Any], unserved: Unserved | None) -> None:
    """The run, where it sends, its times, why nobody serves it, and its counts by state."""
    from rich.table import Table

    reason = f" ({display.clean_markup(row['reason'])})" if row["reason"] else ""
    console.print(f"run {row['run']} · {display.clean_markup(row['campaign'])} · "
                  f"{row['channel']} · [bold]{row['status']}[/]{reason}", highlight=False)
    console.print(f"sent to {row['sent_to']}", highlight=False)
    console.print(_times_line(row), highlight=False)
    for line in unserved.lines() if unserved else []:
        console.print(line, style="yellow", highlight=False, markup=False)
    table = Table("state", "deliveries", show_edge=False)
    for state, n in sorted(row["counts"].items()):
        table.add_row(state, f"{n:,}")
    console.print(table)


def _print_lines(console: Console, row: dict[str, Any], sender_text: list[str]) -> None:
    """The status's lines under the counts: funnel, waits, outcomes, attempts, answers,
    decisions, skips, workers, senders and the A/B test."""
    from scheduler.views.experiment_status import experiment_lines

    for line in _packed(row["funnel"]["line"].split(" · "), console.width - 2):
        console.print(f"  {line}", highlight=False)
    for line in row["waits"]["lines"]:
        console.print(f"  {line}", highlight=False, markup=False)
    if "outcome_lines" in row:  # SMS and voice: the channel's own outcomes
        for line in row["outcome_lines"]:
            console.print(f"  {line}", highlight=False)
    elif "tracking" in row and row["tracking"].get("opted_out"):
        console.print(f"  opted out {row['tracking']['opted_out']:,}", highlight=False)
    for line in _attempt_lines(row, console.width - 2):  # retries and fallback
        console.print(f"  {line}", highlight=False, markup=False)
    for line in row.get("unknown_verdicts", []):
        console.print(f"  {line}", highlight=False)
    for tally in row["answers"]:
        console.print(f"  {tally['line']}", highlight=False, markup=False)
    for step in (row.get("decisions") or {}).get("steps", []):  # steps that follow replies
        console.print(f"  {step['line']}", highlight=False, markup=False)
    if row.get("skipped_by_reason"):
        console.print("  skipped: " + " · ".join(
            f"{kind} {n:,}" for kind, n in row["skipped_by_reason"].items()), highlight=False)
    for rate in row["workers"]:
        per_s = f", {rate['per_s']:,.2f}/s" if rate["per_s"] is not None else ""
        console.print(f"  worker {rate['worker']}: {rate['sent']:,} sent{per_s}",
                      highlight=False)
    for line in sender_text:
        console.print(f"  {line}", highlight=False, markup=False)
    for line in experiment_lines(row["experiment"], row["timezone"], console.width):
        console.print(line, highlight=False, markup=False)


def runs_command(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every run, newest first."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.db import ledger_label
    from scheduler.ledger.fire_store import FireStore
    from scheduler.views.status import runs_rows
    from scheduler.views.unserved import Unserved
    from scheduler.wiring import open_reader

    settings, ledger = open_reader()
    # every run from one snapshot, each with the runs that nobody will send, why, and what
    # to do
    rows = runs_rows(ledger, settings, utcnow())
    console = _console()
    unserved = {row["run"]: Unserved.model_validate(row["unserved"])
                for row in rows if row["unserved"]}
    unplanned = FireStore(ledger.engine).unplanned_fires_zoned()
    if as_json:
        fires = [{"campaign": fire.campaign_name, "fire_time": fire.fire_time.isoformat(),
                  "status": status, "reason": reason} for fire, status, reason, _ in unplanned]
        typer.echo(json.dumps({"ledger": ledger_label(settings), "runs": rows,
                               "fires_without_run": fires}, ensure_ascii=False, indent=2))
        return
    console.print(f"ledger: {ledger_label(settings)}", highlight=False, soft_wrap=True)
    for fire, status, reason, zone in unplanned:  # a scheduled campaign that made no run
        at = time_words.local_time(fire.fire_time, zone)
        console.print(f"{fire.campaign_name} due at {at}: {status}, no run: {reason}",
                      style="yellow", highlight=False, markup=False)
    if not rows and not unplanned:
        console.print("no runs yet: start one with `campaign run FILE`")
        return
    if not rows:
        return
    table = display.table("run", "campaign", "status", "sent to", "deliveries",
                          "created (campaign's zone)", show_edge=False)
    for row in rows:
        shown = "sandbox" if row["target"] == "sandbox" else (row["target"] or "?").removeprefix(
            "service:")
        created = row["created_at"] and datetime.fromisoformat(row["created_at"])
        table.add_row(str(row["run"]), display.clean_markup(row["campaign"]), row["status"],
                      shown, f"{row['deliveries']:,}",
                      time_words.local_time(created or None, row["timezone"]))
    console.print(table)
    # each channel's own outcomes, a line per run (a column would not fit in 80 columns)
    for row in rows:
        console.print(f" run {row['run']} ({row['channel']}): {row['summary']}",
                      highlight=False)
        if row["status"] == "failed" and row["reason"]:  # why, where people look
            console.print(f"   failed: {row['reason']}", style="red", highlight=False,
                          markup=False)
    for verdict in unserved.values():
        for line in verdict.lines():
            console.print(line, style="yellow", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add the run commands."""
    app.command("run")(run_command)
    app.command("resume")(resume_command)
    app.command("pause")(pause_command)
    app.command("cancel")(cancel_command)
    app.command("resend")(resend_command)
    app.command("status")(status_command)
    app.command("runs")(runs_command)
