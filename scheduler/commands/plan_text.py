"""The human form of ``campaign plan``: every line within 80 columns, nothing cut."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from scheduler.core.channel_terms import terms_of
from scheduler.core.time_words import local_time, span

if TYPE_CHECKING:
    from scheduler.campaign.plan_stats import PlanStats


def _at(moment: str | None, zone: str) -> str:
    """A report's ISO time in the campaign's zone, with the zone's label."""
    return local_time(datetime.fromisoformat(moment) if moment else None, zone)


def label_lines(labels: dict[str, Any] | None) -> list[str]:
    """What ``campaign plan`` says of a label filter: names, chats, recipients kept/out."""
    if not labels:
        return []

    def names(key: str) -> str:
        return ", ".join(f"{n} ({labels['chats'][n]:,} chats)" for n in labels[key])

    out = [f"labels in sessions {', '.join(labels['sessions'])}:"]
    if labels["labels"]:
        out.append(f"  only chats labelled {names('labels')}")
    if labels["exclude_labels"]:
        out.append(f"  never chats labelled {names('exclude_labels')}")
    out.append(f"  recipients kept {labels['kept']:,} · not labelled {labels['not_labelled']:,}"
               f" · excluded by label {labels['excluded']:,}")
    lids = sum(labels["unresolved_chats"].values())
    if lids:
        out.append(f"  {lids:,} labelled chats are @lid (or group) JIDs not resolved to a "
                   "phone: they match no recipient")
    return out


def audience_line(audience: dict[str, Any] | None) -> str | None:
    """``[audience]`` in one line ("audience: at most 2 per day, 5 per week per number;
    hold after 5 unread"); None without rules."""
    audience = audience or {}
    caps = [f"{audience[key]:,} per {unit}" for key, unit in
            (("max_per_day", "day"), ("max_per_week", "week")) if audience.get(key)]
    parts = [f"at most {', '.join(caps)} per number"] if caps else []
    if audience.get("hold_unengaged_after"):
        parts.append(f"hold after {audience['hold_unengaged_after']:,} unread")
    return f"audience: {'; '.join(parts)}" if parts else None


def warmup_lines(warming: list[dict[str, Any]] | None) -> list[str]:
    """One line per sender on its warm-up ramp (``s1 warming: day 3 of 8, 65 today``) and
    what the estimate assumes of them."""
    if not warming:
        return []
    return [*(w["line"] for w in warming),
            "  the estimate caps each warming sender day by day, one step up its ramp",
            "  per day it sends, as if it stayed healthy ([senders] in config.toml)"]


def stats_table(stats: PlanStats) -> Table:
    """What ``campaign validate`` says of the recipients: rows read, valid, and why others
    are left out."""
    table = Table(title="Recipients", show_header=False)
    for name, value in (
        ("rows read", stats.read),
        ("valid", stats.valid),
        ("duplicates (first kept)", stats.duplicates),
        ("suppressed (opt-out)", stats.suppressed),
        *((("  of which on the ledger's suppression list", stats.suppressed_ledger),)
          if stats.suppressed_ledger else ()),
        ("invalid or unreachable numbers", stats.invalid_total),
        ("  of which a line type the channel does not reach", stats.unreachable),
        (escape("skipped for a blank value ([blanks])"), stats.blank_skipped),
        ("ninth digit added (add_ninth_digit)", stats.ninth_digit_added),
        *((("not labelled (labels)", stats.not_labelled),
           ("excluded by label (exclude_labels)", stats.label_excluded))
          if stats.labels is not None else ()),
        *((("skipped without consent (consent)", stats.no_consent),) if stats.no_consent
          else ()),
        *((("erased at the person's request", stats.erased),) if stats.erased else ()),
    ):
        table.add_row(name, f"{value:,}")
    return table


def print_plan(console: Console, report: dict[str, Any]) -> None:
    """The human form of a plan report; every line within 80 columns, nothing cut."""
    from scheduler.dispatch.channels import known_channel

    known = known_channel(report["channel"])
    # voice: calls from the account, max_calls at once (not one a sender)
    calls = known is not None and known.has_calls and not known.one_call_per_sender
    _print_steps(console, report, segments=known is not None and bool(known.error_codes))
    _print_senders(console, report)
    _print_parts(console, report)
    _print_times(console, report, calls=calls)


def _print_steps(console: Console, report: dict[str, Any], *, segments: bool) -> None:
    """The steps' table (SMS: with segments) and the recipients skipped before any step."""
    from scheduler.commands.plan_branches import estimate_note, step_estimates

    channel = report["channel"]
    steps = Table(title=f"Campaign {report['campaign']} ({channel})")
    endpoints = terms_of(channel).step_endpoints
    columns = ["step", "kind", *(["endpoint"] if endpoints else []), "delay",
               "planned", "skipped", *(["segments"] if segments else [])]
    for col in columns:
        steps.add_column(col, overflow="fold")
    estimates = step_estimates(report.get("branches"))  # steps that follow replies
    for s in report["steps"]:
        cells = [str(s["step"]), s["kind"]]
        if endpoints:
            cells.append(s["path"].removeprefix("/api/v1/"))
        cells += [f"{s['delay_s']:g}s", estimates.get(s["step"], f"{s['planned']:,}"),
                  f"{s['skipped']:,}"]
        if segments:
            cells.append(f"{s['sms_segments']:,}")
        steps.add_row(*cells)
    console.print(steps)
    for line in estimate_note(report.get("branches"), sum(
            s["planned"] for s in report["steps"] if s["step"] in estimates)):
        console.print(line, highlight=False, markup=False)
    recipients = report["recipients"]
    if recipients.get("no_consent"):
        console.print(f"consent required: {recipients['no_consent']:,} recipients "
                      "without it skipped (no_consent)", highlight=False, markup=False)
    if recipients.get("erased"):
        console.print(f"erased at the person's request: {recipients['erased']:,} "
                      "recipients skipped (person forget)", highlight=False, markup=False)
    if recipients.get("suppressed_ledger"):
        console.print(f"on the ledger's suppression list: "
                      f"{recipients['suppressed_ledger']:,} recipients skipped "
                      "(suppressed)", highlight=False, markup=False)


def _print_senders(console: Console, report: dict[str, Any]) -> None:
    """The senders' table: deliveries, plan limit and last send of each."""
    senders = Table(title=f"Senders (plan limits: {report['limits_source']})")
    for col in ("sender", "recipients", "deliveries", "limit/day", "last send"):
        senders.add_column(col, overflow="fold")
    for s in report["senders"]:
        senders.add_row(
            s["sender"],
            f"{s['recipients']:,}",
            f"{s['deliveries']:,}",
            "–" if s["plan_limit"] is None else f"{s['plan_limit']:,}",
            _at(s["finish"], report["timezone"]),
        )
    console.print(senders)


def _print_parts(console: Console, report: dict[str, Any]) -> None:
    """Warm-up, label filter, the channel's totals, variants, retries and branches."""
    # the channel's, variants' and retries' lines: with the engine's modules, for `plan` only
    from scheduler.commands.plan_branches import branch_lines
    from scheduler.commands.plan_channels import totals_lines
    from scheduler.commands.plan_retries import retry_lines
    from scheduler.commands.plan_variants import variant_lines

    for line in warmup_lines(report.get("warmup")):
        console.print(line, highlight=False, markup=False)
    for line in label_lines(report.get("label_filter")):
        console.print(line, highlight=False, markup=False)
    for line in totals_lines(report):
        console.print(line)
    for line in variant_lines(report.get("variants")):
        console.print(line, highlight=False, markup=False)
    for line in retry_lines(report.get("retries"), report["channel"], report["timezone"]):
        console.print(line, highlight=False, markup=False)
    for line in branch_lines(report.get("branches")):
        console.print(line, highlight=False, markup=False)


def _print_times(console: Console, report: dict[str, Any], *, calls: bool) -> None:
    """Start, finish and pace, and what holds the sends: holidays, audience, latest time."""
    zone = report["timezone"]
    what = "call" if calls else "send"
    console.print(f"start  {_at(report['start'], zone)}\n"
                  f"finish {_at(report['finish'], zone)} (≈ {span(report['duration_s'])})\n"
                  f"pace   one {what} every {report['pace_interval_s']:.2f} s per sender")
    if report["limited_by"] == "calls in progress":
        console.print(f"       calls in progress allow one every "
                      f"{report['mean_interval_s']:.2f} s on average")
    if not terms_of(report["channel"]).step_endpoints:
        console.print("       a request of n recipients spends n sends of the pace; the "
                      "finish")
        console.print("       is when the last request goes out"
                      + (", plus one call's length" if calls else ""))
    for held in report.get("holidays_waited") or ():
        console.print(f"       holiday: {held['name']} ({held['date']}): no sends that day",
                      highlight=False, markup=False)
    if report.get("holidays") == "recipient":
        console.print("       each recipient's state holidays (from the area code) hold "
                      "its numbers too", highlight=False, markup=False)
    audience = audience_line(report.get("audience"))
    if audience is not None:
        console.print(audience, highlight=False, markup=False)
    if report["finishes_before_latest"] is False:
        console.print(
            f"[yellow]! the estimate passes the latest send time "
            f"{_at(report['latest'], zone)}: later deliveries would expire[/]",
            markup=True,
        )
    if report["recipient_timezone"]:
        console.print(
            "note: windows are applied in each recipient's zone when sending;\n"
            "      the estimate uses the campaign's zone"
        )
