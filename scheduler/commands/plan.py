"""``campaign validate``, ``campaign preview`` and ``campaign plan``: look before sending.

- ``validate FILE [--json]``: every error it can find in one run: the definition (with its
  TOML line), a one-off ``schedule.at`` already past, malformed CSV rows, templates (file
  and line), every row's rendered messages (undefined variables list the CSV's columns;
  bodies over the service's bounds); exit 1 on any. Invalid numbers, numbers of a line type
  the channel does not reach, duplicates and opt-outs are counted, not errors, unless there
  are more invalid numbers than ``[recipients] max_invalid`` allows.
- ``preview FILE [--rows N] [--json]``: the first N valid recipients' messages, each body
  exactly as the client would send it (the first sender as ``sessionId``).
- ``plan FILE [--start ISO] [--json]``: totals per sender and step, SMS segments and the
  estimated finish given pace, jitter (mean), window, days, daily cap and plan limits
  (from ``GET /api/v1/limits/{sessionId}`` when a service is configured, else the file's
  ``pace.plan_limit``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.json import JSON
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from scheduler.campaign.exceptions import CampaignError, Issue
from scheduler.dispatch.pacing import Quota, estimate_finish
from scheduler.dispatch.windows import SendWindow
from scheduler.errors import SchedulerError
from scheduler.timeutil import utcnow

if TYPE_CHECKING:
    from scheduler.campaign.loader import Campaign
    from scheduler.campaign.plan import PlanStats

#: The clock of ``campaign plan`` when ``--start`` is not given (tests replace it).
clock: Callable[[], datetime] = utcnow
_CHANNEL_QUOTA = {"whatsapp": "messages", "sms": "sms", "voice": "voice"}

FileArg = typer.Argument(..., help="The campaign definition (TOML).", show_default=False)
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of tables.")


def _fail() -> NoReturn:
    """Exit with status 1 (``SystemExit``: ``cli.main`` runs click non-standalone, where a
    ``typer.Exit`` code would be returned and lost)."""
    raise SystemExit(1)


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _print_issues(console: Console, issues: list[Issue]) -> None:
    for issue in issues:
        console.print(f"[red]✗[/] {escape(str(issue))}", markup=True)


def _stats_table(stats: PlanStats) -> Table:
    table = Table(title="Recipients", show_header=False)
    for name, value in (
        ("rows read", stats.read),
        ("valid", stats.valid),
        ("duplicates (first kept)", stats.duplicates),
        ("suppressed (opt-out)", stats.suppressed),
        ("invalid or unreachable numbers", stats.invalid_total),
        ("  of which a line type the channel does not reach", stats.unreachable),
        ("ninth digit added (add_ninth_digit)", stats.ninth_digit_added),
    ):
        table.add_row(name, f"{value:,}")
    return table


def _check(path: Path, now: datetime | None) -> tuple[Campaign | None, PlanStats, list[Issue]]:
    """Every problem of a campaign in one pass (see the module doc); never raises a campaign
    error. ``now`` checks that a one-off ``schedule.at`` has not passed."""
    from scheduler.campaign.loader import start_issues
    from scheduler.campaign.plan import PlanStats, build_plan, load_campaign

    stats, issues = PlanStats(), []
    campaign = None
    try:
        campaign = load_campaign(path, lenient=True)
        issues.extend(campaign.issues)
        if now is not None:
            issues.extend(start_issues(campaign, now))
        plan = build_plan(campaign, strict=False)
        try:
            stats = plan.consume()
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
        console = _out()
        if stats.read or not issues:
            console.print(_stats_table(stats))
        if stats.invalid:
            table = Table(title="Invalid numbers (skipped)")
            for col in ("row", "value", "reason"):
                table.add_column(col)
            for item in stats.invalid[:50]:
                table.add_row(str(item["row"]), escape(item["value"]), escape(item["reason"]))
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


def preview_rows(path: Path, rows: int) -> list[dict[str, Any]]:
    """``{row, step, to, endpoint, body}`` of the first ``rows`` valid recipients."""
    from scheduler.campaign.plan import build_plan, load_campaign

    campaign = load_campaign(path)
    plan = build_plan(campaign, chunk_rows=max(100, min(rows * 4, 50_000)), strict=True)
    session = campaign.preview_session
    out: list[dict[str, Any]] = []
    recipients: set[int] = set()
    for chunk in plan.chunks():
        for item in chunk:
            if item["state"] != "planned":
                continue
            if item["row"] not in recipients:
                if len(recipients) >= rows:
                    return out
                recipients.add(item["row"])
            kind = plan.steps[item["step"]].kind
            body = {**item["payload"], "to": item["to"]}
            if kind.has_session:
                body["sessionId"] = session
            model = kind.model.model_validate(body)
            wire = model.model_dump(mode="json", by_alias=True, exclude_none=True)
            out.append(
                {
                    "row": item["row"],
                    "step": item["step"],
                    "to": item["to"],
                    "endpoint": item["path"],
                    "body": wire,
                }
            )
    return out


def preview(
    file: Path = FileArg,
    rows: int = typer.Option(3, "--rows", min=1, help="How many recipients to show."),
    as_json: bool = JsonOpt,
) -> None:
    """Show the rendered messages of the first N valid recipients."""
    items = preview_rows(file, rows)
    if as_json:
        typer.echo(json.dumps(items, ensure_ascii=False))
        return
    console = _out()
    for item in items:
        body = item["body"]
        title = f"row {item['row']} → {item['to']} · step {item['step']} · {item['endpoint']}"
        text = body.get("text") or body.get("caption") or body.get("content")
        if isinstance(text, str) and len(body) <= 3:
            console.print(Panel(text, title=title, title_align="left"))
        else:
            console.print(
                Panel(JSON.from_data(body, ensure_ascii=False), title=title, title_align="left")
            )


def _parse_start(text: str | None, campaign: Campaign) -> datetime:
    if text is None:
        return campaign.start_time(clock())
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SchedulerError(f"--start {text!r}: expected an ISO date-time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=campaign.zone)


async def _service_quotas(campaign: Campaign) -> list[Quota | None] | None:
    from scheduler.config import load_settings
    from scheduler.service.client import ServiceClient

    settings = load_settings(near=campaign.path)
    service = settings.service_endpoint()  # half a configuration is an error, said above
    if service is None:
        return None
    channel = _CHANNEL_QUOTA[campaign.spec.channel]
    quotas: list[Quota | None] = []
    async with ServiceClient(*service, timeout_s=settings.http_timeout_s) as client:
        for sender in campaign.senders:
            limits = await client.get_limits(sender)
            limit = getattr(limits.limits, channel, None)
            used = getattr(limits.used, channel, None) or 0
            resets = None
            if limits.resetsAt:
                try:
                    resets = datetime.fromisoformat(limits.resetsAt.replace("Z", "+00:00"))
                except ValueError:
                    resets = None
            quotas.append(Quota(limit, used, resets) if limit is not None else None)
    return quotas


def plan_quotas(campaign: Campaign) -> tuple[list[Quota | None], str]:
    """Per-sender plan limits and where they came from: service, file or none."""
    try:
        quotas = asyncio.run(_service_quotas(campaign))
    except SchedulerError as exc:
        Console(stderr=True).print(
            f"[yellow]plan limits not read from the service:[/] {exc}", markup=True, highlight=False
        )
        quotas = None
    if quotas is not None:
        return quotas, "service"
    limit = campaign.spec.pace.plan_limit
    if limit is not None:
        return [Quota(limit) for _ in campaign.senders], "file"
    return [None for _ in campaign.senders], "none"


def plan_report(path: Path, start_text: str | None) -> tuple[dict[str, Any], list[Issue]]:
    """The ``campaign plan --json`` object and the errors found (the same as ``validate``'s;
    with ``--start`` the schedule's own start time is not checked)."""
    campaign, stats, issues = _check(path, clock() if start_text is None else None)
    if campaign is None:
        return {"recipients": stats.recipients_json()}, issues
    start = _parse_start(start_text, campaign)
    spec, steps = campaign.spec, campaign.steps
    quotas, source = plan_quotas(campaign)
    senders = campaign.senders
    counts = [stats.recipients_per_sender[s] * len(steps) for s in senders]
    from scheduler.campaign.options import run_options

    options = run_options(campaign)
    estimate = estimate_finish(
        counts,
        start=start,
        rate=options.rate_per_s,
        jitter=options.jitter_s,
        window=SendWindow.of(options.window, options.timezone),
        daily_cap=options.daily_cap,
        quotas=quotas,
        tz=options.zone,
        extra_delay_s=sum(options.step_delays_s),
    )
    latest = options.latest_for(start)
    report = {
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
                "finish": f.isoformat() if (f := estimate.per_sender[i]) else None,
            }
            for i, s in enumerate(senders)
        ],
        "sms_segments": sum(stats.sms_segments_per_step.values()),
        "limits_source": source,
        "start": start.isoformat(),
        "finish": estimate.finish.isoformat(),
        "duration_s": estimate.duration.total_seconds(),
        "mean_interval_s": estimate.interval_s,
        "latest": latest.isoformat() if latest else None,
        "finishes_before_latest": None if latest is None else estimate.finish <= latest,
        "recipient_timezone": spec.recipient_timezone,
        "errors": [issue.as_dict() for issue in issues],
    }
    return report, issues


def plan(
    file: Path = FileArg,
    start: str = typer.Option(None, "--start", help="Start time (ISO); default: the schedule."),
    as_json: bool = JsonOpt,
) -> None:
    """Totals per sender and step, and the estimated finish time."""
    report, issues = plan_report(file, start)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False))
        if issues:
            _fail()
        return
    console = _out()
    if "steps" in report:
        steps = Table(title=f"Campaign {report['campaign']} ({report['channel']})")
        for col in ("step", "kind", "endpoint", "delay", "planned", "skipped", "SMS parts"):
            steps.add_column(col)
        for s in report["steps"]:
            steps.add_row(
                str(s["step"]),
                s["kind"],
                s["path"],
                f"{s['delay_s']:g}s",
                f"{s['planned']:,}",
                f"{s['skipped']:,}",
                f"{s['sms_segments']:,}" if report["channel"] == "sms" else "–",
            )
        console.print(steps)
        senders = Table(title=f"Senders (plan limits: {report['limits_source']})")
        for col in ("sender", "recipients", "deliveries", "plan limit/day", "finishes"):
            senders.add_column(col)
        for s in report["senders"]:
            senders.add_row(
                s["sender"],
                f"{s['recipients']:,}",
                f"{s['deliveries']:,}",
                "–" if s["plan_limit"] is None else f"{s['plan_limit']:,}",
                s["finish"] or "–",
            )
        console.print(senders)
        console.print(
            f"start  {report['start']}\nfinish {report['finish']} "
            f"(≈ {report['duration_s'] / 3600:.2f} h, one send every "
            f"{report['mean_interval_s']:.2f} s per sender)"
        )
        if report["finishes_before_latest"] is False:
            console.print(
                f"[yellow]! the estimate passes the latest send time "
                f"{report['latest']}: later deliveries would expire[/]",
                markup=True,
            )
        if report["recipient_timezone"]:
            console.print(
                "note: windows are applied in each recipient's zone when sending; "
                "the estimate uses the campaign's zone"
            )
    _print_issues(console, issues)
    if issues:
        _fail()


def register(app: typer.Typer) -> None:
    """Add ``validate``, ``preview`` and ``plan`` to the ``campaign`` command."""
    app.command("validate")(validate)
    app.command("preview")(preview)
    app.command("plan")(plan)
