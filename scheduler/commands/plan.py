"""``campaign validate``, ``campaign preview`` and ``campaign plan``: look before sending.

- ``validate FILE [--json]``: every error it can find in one run: the definition (with its
  TOML line), a one-off ``schedule.at`` already past, malformed CSV rows, templates (file
  and line), every row's rendered messages (undefined variables list the CSV's columns;
  bodies over the service's bounds); exit 1 on any. Invalid numbers, numbers of a line type
  the channel does not reach, duplicates and opt-outs are counted, not errors, unless there
  are more invalid numbers than ``[recipients] max_invalid`` allows.
- ``preview FILE [--rows N] [--json]``: the requests of the first N valid recipients, as
  the channel sends them (:mod:`scheduler.commands.preview`).
- ``plan FILE [--start ISO] [--call-seconds S] [--json]``: totals per step and sender, and
  the channel's own (:mod:`scheduler.commands.plan_channels`: SMS segments and estimated
  cost, bulk requests as the engine groups them, voice calls in progress), and the
  estimated finish given pace, jitter (mean), window, days, daily cap, plan limits (from
  ``GET /api/v1/limits/{sessionId}`` for WhatsApp senders when a service is configured,
  else the file's ``pace.plan_limit``), bulk requests and, for calls, how many may be in
  progress and how long one lasts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from scheduler.campaign.exceptions import CampaignError, Issue
from scheduler.core.display import clean_markup
from scheduler.core.errors import SchedulerError
from scheduler.core.time_words import iso_utc
from scheduler.core.timeutil import utcnow

# rich's console and tables, the campaign's loader and the engine's pacing (pydantic models,
# SQLAlchemy) are imported when a command runs: `campaign --help` registers these commands.
if TYPE_CHECKING:
    from rich.console import Console

    from scheduler.campaign.loader import Campaign
    from scheduler.campaign.plan import PlanStats
    from scheduler.commands.plan_finish import PlanFigures

#: The clock of ``campaign plan`` when ``--start`` is not given (tests replace it).
clock: Callable[[], datetime] = utcnow

FileArg = typer.Argument(..., help="The campaign definition (TOML).", show_default=False)
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of tables.")


def _fail() -> NoReturn:
    """Exit with status 1 (``SystemExit``: ``cli.main`` runs click non-standalone, where a
    ``typer.Exit`` code would be returned and lost)."""
    raise SystemExit(1)


def _out() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def _note(text: str) -> None:
    """A yellow note on stderr (rich markup in ``text``)."""
    from rich.console import Console

    Console(stderr=True).print(text, markup=True, highlight=False)


def _print_issues(console: Console, issues: list[Issue]) -> None:
    for issue in issues:
        console.print(f"[red]✗[/] {clean_markup(issue)}", markup=True)


def _remote_issues(campaign: Campaign) -> list[Issue]:
    """What the service says of the campaign's templates, products and senders (notes, such
    as a service that could not be asked when nothing required it, go to stderr)."""
    from scheduler.usecases.lookups import read_remote

    try:
        facts = read_remote(campaign)
    except SchedulerError as exc:
        return [Issue(campaign.label, str(exc))]
    from rich.markup import escape

    for note in facts.notes:
        _note(f"[yellow]{escape(note)}[/]")
    return facts.issues


def _check(path: Path, now: datetime | None,
           on_rows: Callable[[Campaign, list[dict[str, Any]]], None] | None = None,
           ) -> tuple[Campaign | None, PlanStats, list[Issue]]:
    """Every problem of a campaign in one pass (see the module doc); never raises a campaign
    error. ``now`` checks that a one-off ``schedule.at`` has not passed; ``on_rows`` sees
    each chunk of plan rows."""
    from scheduler.campaign.loader import start_issues
    from scheduler.campaign.plan import PlanStats, build_plan, load_campaign
    from scheduler.usecases.label_lookup import project_label_audience
    from scheduler.usecases.link_setup import bind_preview

    stats, issues = PlanStats(), []
    campaign = None
    try:
        campaign = load_campaign(path, lenient=True)
        issues.extend(campaign.issues)
        if now is not None:
            issues.extend(start_issues(campaign, now))
        issues.extend(_remote_issues(campaign))
        issues.extend(bind_preview(campaign))  # tracked links: the length a run's have
        labels = project_label_audience(campaign) if not campaign.issues else None
        from scheduler.usecases.consent_lookup import (
            project_consent,
            project_erased,
            project_listed,
        )

        erased = project_erased(campaign) if not campaign.issues else None
        plan = build_plan(campaign, strict=False, labels=labels,
                          imported=project_consent(campaign) if not campaign.issues else None,
                          erased=erased.reason if erased is not None else None,
                          listed=project_listed(campaign) if not campaign.issues else None)
        try:
            for rows in plan.chunks():
                if on_rows is not None:
                    on_rows(campaign, rows)
            stats = plan.stats
        except CampaignError as exc:
            stats = plan.stats
            issues.extend(exc.issues)
        issues.extend(stats.errors)
    except CampaignError as exc:
        issues.extend(exc.issues)
    return campaign, stats, issues


def validate(file: Path = FileArg, as_json: bool = JsonOpt) -> None:
    """Check a campaign: definition, recipients, every rendered message. Exit 1 on errors."""
    from scheduler.campaign.phones import NINTH_DIGIT

    _campaign, stats, issues = _check(file, clock())
    if as_json:
        report = {
            "recipients": stats.recipients_json(),
            "errors": [issue.as_dict() for issue in issues],
        }
        typer.echo(json.dumps(report, ensure_ascii=False))
    else:
        from scheduler.commands.plan_text import stats_table

        console = _out()
        if stats.read or not issues:
            console.print(stats_table(stats))
        if stats.invalid:
            from rich.table import Table

            table = Table(title="Invalid numbers (skipped)")
            for col in ("row", "value", "reason"):
                table.add_column(col)
            for item in stats.invalid[:50]:
                table.add_row(str(item["row"]), clean_markup(item["value"]),
                              clean_markup(item["reason"]))
            console.print(table)
            if stats.invalid_total > 50:
                console.print(f"… and {stats.invalid_total - 50:,} more invalid numbers")
            if any(i["reason"].startswith(NINTH_DIGIT) for i in stats.invalid):
                console.print(
                    "note: [recipients] add_ninth_digit = true adds the missing ninth digit"
                )
        _print_issues(console, issues)
        if issues:
            console.print(f"[bold red]{len(issues)} error(s)[/]", markup=True)
        else:
            console.print("[bold green]✓ valid[/]", markup=True)
    if issues:
        _fail()


def _parse_start(text: str | None, campaign: Campaign) -> datetime:
    if text is None:
        return campaign.start_time(clock())
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SchedulerError(f"--start {text!r}: expected an ISO date-time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=campaign.zone)


def plan_report(path: Path, start_text: str | None, *,
                call_seconds: float | None = None) -> tuple[dict[str, Any], list[Issue]]:
    """The ``campaign plan --json`` object and the errors found (the same as ``validate``'s;
    with ``--start`` the schedule's own start time is not checked). ``call_seconds``: how
    long a call lasts, ringing included (voice; default: the settings'
    ``voice_call_estimate_s``, which a rehearsal assumes too)."""
    from scheduler.commands.plan_finish import BulkTallies, plan_figures

    tallies = BulkTallies()
    campaign, stats, issues = _check(path, clock() if start_text is None else None,
                                     tallies.feed)
    if campaign is None:
        return {"recipients": stats.recipients_json()}, issues
    start = _parse_start(start_text, campaign)
    figures = plan_figures(campaign, stats, tallies, start, call_seconds)
    from scheduler.commands.plan_extras import later_parts

    return (_report(campaign, stats, start, figures, issues)
            | later_parts(campaign, stats, figures.options, start)), issues


def _report(campaign: Campaign, stats: PlanStats, start: datetime, figures: PlanFigures,
            issues: list[Issue]) -> dict[str, Any]:
    """The first parts of ``campaign plan --json``: steps, senders, totals and times."""
    from scheduler.dispatch.pacing import mean_interval

    spec, options, estimate = campaign.spec, figures.options, figures.estimate
    window, latest = figures.window, options.latest_for(start)
    return {
        "campaign": spec.name,
        "channel": spec.channel,
        "recipients": stats.recipients_json(),
        "steps": [
            {
                "step": s.index,
                "kind": s.kind.name,
                "path": s.kind.path,
                "delay_s": s.delay_s,
                "planned": stats.planned_per_step[s.index],
                "skipped": stats.skipped_per_step[s.index],
                "sms_segments": stats.sms_segments_per_step[s.index],
            }
            for s in campaign.steps
        ],
        "senders": [
            {
                "sender": s,
                "recipients": stats.recipients_per_sender[s],
                "deliveries": figures.counts[i],
                "plan_limit": q.limit if (q := figures.quotas[i]) else None,
                "finish": iso_utc(estimate.per_sender[i]),
            }
            for i, s in enumerate(campaign.senders)
        ],
        "channel_totals": figures.channel_totals,
        "sms_segments": sum(stats.sms_segments_per_step.values()),
        "limits_source": figures.limits_source,
        "timezone": options.timezone,  # times are UTC (ISO 8601); text shows them in it
        "start": iso_utc(start),
        "finish": iso_utc(estimate.finish),
        "duration_s": estimate.duration.total_seconds(),
        "mean_interval_s": estimate.interval_s,
        "pace_interval_s": mean_interval(options.rate_per_s, options.jitter_s),
        "limited_by": figures.limited_by,
        "latest": iso_utc(latest),
        "finishes_before_latest": None if latest is None else estimate.finish <= latest,
        "recipient_timezone": spec.recipient_timezone,
        "holidays": spec.schedule.holidays,
        # the holidays the estimate waits over ("holiday: Natal"), by local date
        "holidays_waited": [] if window is None else
        window.holiday_dates(start, estimate.finish),
        "audience": spec.audience.model_dump(),
        "warmup": [r.as_dict() | {"line": r.line()} for r in figures.ramps.values()],
        "errors": [issue.as_dict() for issue in issues],
    }


def plan(
    file: Path = FileArg,
    start: str = typer.Option(None, "--start", help="Start time (ISO); default: the schedule."),
    call_seconds: float = typer.Option(
        None, "--call-seconds", min=1,
        help="Voice: how long a call lasts, ringing included (default: the settings' "
             "voice_call_estimate_s)."),
    as_json: bool = JsonOpt,
) -> None:
    """Totals per step, sender and channel, and the estimated finish time."""
    report, issues = plan_report(file, start, call_seconds=call_seconds)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False))
        if issues:
            _fail()
        return
    console = _out()
    if "steps" in report:
        from scheduler.commands.plan_text import print_plan

        print_plan(console, report)
    _print_issues(console, issues)
    if issues:
        _fail()


def register(app: typer.Typer) -> None:
    """Add ``validate``, ``preview`` and ``plan`` to the ``campaign`` command."""
    from scheduler.commands.preview import preview

    app.command("validate")(validate)
    app.command("preview")(preview)
    app.command("plan")(plan)
