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
from scheduler.core.channel_terms import terms_of
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
    from scheduler.dispatch.pacing import Quota

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


async def _service_quotas(campaign: Campaign) -> list[Quota | None] | None:
    from scheduler.dispatch.pacing import Quota
    from scheduler.settings.load import load_settings

    settings = load_settings(near=campaign.path)
    service = settings.service_endpoint()  # half a configuration is an error, said above
    if service is None:
        return None
    from scheduler.service.client import ServiceClient

    quotas: list[Quota | None] = []
    async with ServiceClient(*service, timeout_s=settings.http_timeout_s) as client:
        for sender in campaign.senders:
            limits = await client.get_limits(sender)
            limit = limits.limits.messages
            used = limits.used.messages or 0
            resets = None
            if limits.resetsAt:
                try:
                    resets = datetime.fromisoformat(limits.resetsAt.replace("Z", "+00:00"))
                except ValueError:
                    resets = None
            quotas.append(Quota(limit, used, resets) if limit is not None else None)
    return quotas


def plan_quotas(campaign: Campaign) -> tuple[list[Quota | None], str]:
    """Per-sender plan limits and where they came from: service, file or none. SMS and
    voice send from the account, which has no per-session plan limit (as the engine's
    channels say): only the file's ``plan_limit`` applies to them."""
    import asyncio

    from scheduler.dispatch.channels import known_channel
    from scheduler.dispatch.pacing import Quota

    channel = known_channel(campaign.spec.channel)
    try:
        quotas = None
        if channel is not None and channel.sender_quotas:
            quotas = asyncio.run(_service_quotas(campaign))
    except SchedulerError as exc:
        _note(f"[yellow]plan limits not read from the service:[/] {exc}")
        quotas = None
    if quotas is not None:
        return quotas, "service"
    limit = campaign.spec.pace.plan_limit
    if limit is not None:
        return [Quota(limit) for _ in campaign.senders], "file"
    return [None for _ in campaign.senders], "none"


def plan_report(path: Path, start_text: str | None, *,
                call_seconds: float | None = None) -> tuple[dict[str, Any], list[Issue]]:
    """The ``campaign plan --json`` object and the errors found (the same as ``validate``'s;
    with ``--start`` the schedule's own start time is not checked). ``call_seconds``: how
    long a call lasts, ringing included (voice; default: the settings'
    ``voice_call_estimate_s``, which a rehearsal assumes too)."""
    from scheduler.campaign.options import run_options
    from scheduler.commands import plan_channels as pc
    from scheduler.commands.preview import campaign_channel, engine_settings
    from scheduler.dispatch.pacing import estimate_finish, mean_interval
    from scheduler.dispatch.windows import SendWindow

    tallies: list[pc.BulkTally] = []
    settings: dict[str, Any] = {}

    def tally(campaign: Campaign, rows: list[dict[str, Any]]) -> None:
        if terms_of(campaign.spec.channel).step_endpoints:
            return
        if not tallies:
            settings.update(engine_settings(campaign))
            tallies.append(pc.BulkTally(campaign_channel(campaign, settings)))
        tallies[0].feed(rows)

    campaign, stats, issues = _check(path, clock() if start_text is None else None, tally)
    if campaign is None:
        return {"recipients": stats.recipients_json()}, issues
    start = _parse_start(start_text, campaign)
    spec, steps = campaign.spec, campaign.steps
    quotas, source = plan_quotas(campaign)
    senders = campaign.senders
    counts = [stats.recipients_per_sender[s] * len(steps) for s in senders]
    options = run_options(campaign)
    channel = tallies[0].channel if tallies else campaign_channel(campaign, settings)
    bulk = tallies[0].finish() if tallies else None
    deliveries = sum(stats.planned_per_step.values())
    from scheduler.settings.engine import EngineSettings  # a pydantic model: not at start-up

    engine: EngineSettings = settings.get("engine") or EngineSettings()
    call_s = call_seconds if call_seconds is not None else engine.voice_call_estimate_s
    totals = pc.totals(
        channel, bulk, recipients=stats.valid, deliveries=deliveries,
        encodings=dict(stats.sms_encodings),
        prices=dict(getattr(channel, "prices", {})), call_seconds=call_s,
        call_seconds_source="--call-seconds" if call_seconds is not None
        else "settings voice_call_estimate_s",
        max_calls_asked=options.max_calls,
        account_calls=engine.voice_max_calls)
    rate, jitter, limited_by = pc.pace(channel, options, counts, deliveries,
                                     bulk.total if bulk else 0, call_s)
    timed = counts if bulk is None or channel.has_calls else \
        pc.effective_counts(counts, deliveries, bulk.total)
    from scheduler.dispatch.warmup_eta import ramp_caps
    from scheduler.usecases.plan_warmup import plan_ramps

    ramps = plan_ramps(campaign.path, senders, start=start, tz=options.zone,
                       normal_cap=options.daily_cap)
    window = SendWindow.of(options.window, options.timezone)
    estimate = estimate_finish(
        timed,
        start=start,
        rate=rate,
        jitter=jitter,
        window=window,
        daily_cap=options.daily_cap,
        quotas=quotas,
        tz=options.zone,
        extra_delay_s=sum(options.step_delays_s) + (call_s if channel.has_calls else 0.0),
        day_caps=[ramp_caps(r.profile, r.day, options.daily_cap) if (r := ramps.get(s))
                  else None for s in senders],
    )
    latest = options.latest_for(start)
    report: dict[str, Any] = {
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
            for s in steps
        ],
        "senders": [
            {
                "sender": s,
                "recipients": stats.recipients_per_sender[s],
                "deliveries": counts[i],
                "plan_limit": q.limit if (q := quotas[i]) else None,
                "finish": iso_utc(estimate.per_sender[i]),
            }
            for i, s in enumerate(senders)
        ],
        "channel_totals": totals,
        "sms_segments": sum(stats.sms_segments_per_step.values()),
        "limits_source": source,
        "timezone": options.timezone,  # times are UTC (ISO 8601); text shows them in it
        "start": iso_utc(start),
        "finish": iso_utc(estimate.finish),
        "duration_s": estimate.duration.total_seconds(),
        "mean_interval_s": estimate.interval_s,
        "pace_interval_s": mean_interval(options.rate_per_s, options.jitter_s),
        "limited_by": limited_by,
        "latest": iso_utc(latest),
        "finishes_before_latest": None if latest is None else estimate.finish <= latest,
        "recipient_timezone": spec.recipient_timezone,
        "holidays": spec.schedule.holidays,
        # the holidays the estimate waits over ("holiday: Natal"), by local date
        "holidays_waited": [] if window is None else
        window.holiday_dates(start, estimate.finish),
        "audience": spec.audience.model_dump(),
        "warmup": [r.as_dict() | {"line": r.line()} for r in ramps.values()],
        "errors": [issue.as_dict() for issue in issues],
    }
    from scheduler.commands.plan_extras import later_parts

    return report | later_parts(campaign, stats, options, start), issues


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
