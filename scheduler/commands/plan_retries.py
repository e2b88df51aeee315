"""What ``campaign plan`` says of a campaign's second chances: each step's retry rules
(after what, the delay, up to how many attempts, the window in the recipient's zone), the
most sends they can make, the earliest moments their waves can come, and the fallback
(when, on which channel, to how many recipients; how many it cannot reach, and why).

The waves' times are the earliest possible: the first attempt at the plan's start, each
next one ``delay`` after the previous inside the rule's window and the campaign's window
(read in the campaign's zone; a recipient elsewhere is called in their own); the
fallback's, ``after`` past the start inside the campaign's window.
"""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta
from typing import Any

from scheduler.campaign.loader import Campaign
from scheduler.campaign.plan_stats import PlanStats
from scheduler.campaign.recycle_spec import when_words
from scheduler.core.channel_terms import terms_of
from scheduler.core.time_words import iso_utc, local_time, span, zone_label
from scheduler.core.units import load_zone
from scheduler.dispatch.windows import SendWindow
from scheduler.settings.retry_rules import RetryRule, RuleWindow
from scheduler.settings.run import RunOptions

_ON = {"no_answer": "not answered", "busy": "busy", "failed": "failed",
       "undelivered": "undelivered", "not_answered": "not answered"}


def _segments(channel: str) -> bool:
    """Whether ``channel``'s sends are priced by segment (SMS)."""
    from scheduler.dispatch.channels import known_channel

    known = known_channel(channel)
    return known is not None and known.error_codes


def _clock(minutes: int) -> str:
    return f"{minutes // 60 % 24:02d}:{minutes % 60:02d}"


def window_text(window: RuleWindow | None) -> str | None:
    """``"09:00-20:00"``; None: any hour."""
    if window is None:
        return None
    return f"{_clock(window.opens_min)}-{_clock(window.closes_min)}"


def _earliest(moment: datetime, windows: list[SendWindow]) -> datetime:
    """The first moment at or after ``moment`` when every window is open."""
    for _round in range(16):
        moved = moment
        for window in windows:
            moved = window.next_open(moved)
        if moved == moment:
            return moment
        moment = moved
    return moment


def _waves(rule: RetryRule, start: datetime, options: RunOptions) -> list[dict[str, Any]]:
    """Attempts 2..max of ``rule`` at their earliest, each ``delay`` after the previous."""
    zone = options.zone
    windows = [w for w in (SendWindow.of(options.window, zone),) if w is not None]
    if rule.window is not None:
        windows.append(SendWindow(rule.window.opens_min, rule.window.closes_min, "*", zone))
    moment, out = start, []
    for attempt in range(2, rule.max_attempts + 1):
        moment = _earliest(moment + timedelta(seconds=rule.delay_s), windows)
        out.append({"attempt": attempt, "earliest": iso_utc(moment),
                    "after_start_s": (moment - start).total_seconds()})
    return out


def retries_report(campaign: Campaign, stats: PlanStats, options: RunOptions,
                   start: datetime) -> dict[str, Any] | None:
    """The plan report's ``retries`` (None: no retry rule, no ``min_talk``, no fallback)."""
    recycle = options.recycle
    if recycle is None:
        return None
    steps = []
    for step in campaign.steps:
        rules = recycle.steps.get(step.index)
        if rules is None:
            continue
        planned = stats.planned_per_step[step.index]
        most = recycle.max_attempts(step.index)
        steps.append({
            "step": step.index, "kind": step.kind.name, "recipients": planned,
            "max_attempts": most, "max_sends": planned * most, "min_talk_s": rules.min_talk_s,
            "rules": [{"on": r.on, "delay_s": r.delay_s, "max_attempts": r.max_attempts,
                       "window": window_text(r.window), "codes": list(r.codes),
                       "waves": _waves(r, start, options)} for r in rules.rules],
        })
    report: dict[str, Any] = {"steps": steps, "fallback": None}
    fallback, spec = recycle.fallback, campaign.spec.fallback
    if fallback is not None and spec is not None:
        # the fallback run keeps the campaign's window (scheduler.campaign.options)
        windows = [w for w in (SendWindow.of(options.window, options.zone),) if w is not None]
        earliest = _earliest(start + timedelta(seconds=fallback.after_s), windows)
        report["fallback"] = {
            "after_s": fallback.after_s, "when": fallback.when, "channel": fallback.channel,
            "earliest": iso_utc(earliest),
            "rate_per_s": spec.rate.per_s if spec.rate is not None else None,
            "eligible": stats.fallback_eligible,
            "not_eligible": dict(stats.fallback_none.most_common()),
            "not_eligible_total": sum(stats.fallback_none.values()),
            "sms_segments": stats.fallback_segments if _segments(fallback.channel) else None,
        }
    return report


def _rule_lines(rule: dict[str, Any], what: str, zone: str) -> list[str]:
    window = f"within {rule['window']}" if rule["window"] else "in the campaign's window"
    codes = f" ({', '.join(rule['codes'])})" if rule["codes"] else ""
    lines = [f"    {_ON.get(rule['on'], rule['on'])}{codes}: again {span(rule['delay_s'])} "
             f"later, up to {rule['max_attempts']} {what}, {window}"]
    if not rule["waves"]:
        return lines
    moments = [datetime.fromisoformat(w["earliest"]).astimezone(load_zone(zone))
               for w in rule["waves"]]
    first = moments[0]
    items = [f"{w['attempt']} at {m:%H:%M}" if m.date() == first.date()
             else f"{w['attempt']} on {m:%m-%d} at {m:%H:%M}"
             for w, m in zip(rule["waves"], moments, strict=True)]
    text = (f"earliest: attempt {', '.join(items)} "
            f"({local_time(first, zone).split(' ', 2)[0]} {zone_label(first)})")
    lines.extend(textwrap.wrap(text, 80, initial_indent=" " * 6, subsequent_indent=" " * 8))
    return lines


def retry_lines(report: dict[str, Any] | None, channel: str, zone: str) -> list[str]:
    """The plan's lines about retries and the fallback (each within 80 columns)."""
    if report is None:
        return []
    what = terms_of(channel).noun
    lines: list[str] = []
    if report["steps"]:
        lines.append("retries (windows in each recipient's own zone):")
    for step in report["steps"]:
        lines.append(f"  step {step['step'] + 1} ({step['kind']}): {step['recipients']:,} "
                     f"recipients, at most {step['max_sends']:,} {what} "
                     f"({step['max_attempts']} each)")
        if step["min_talk_s"]:
            lines.append(f"    an answered call under {span(step['min_talk_s'])} counts as "
                         "not answered")
        for rule in step["rules"]:
            lines.extend(_rule_lines(rule, what, zone))
    fallback = report.get("fallback")
    if fallback is not None:
        lines.append(f"fallback: {fallback['channel']} {span(fallback['after_s'])} after the "
                     f"first send, if {when_words(fallback['when'])}")
        earliest = local_time(datetime.fromisoformat(fallback["earliest"]), zone)
        lines.append(f"  at the earliest {earliest}; {fallback['eligible']:,} numbers can "
                     "get it")
        if fallback["not_eligible_total"]:
            lines.append(f"  {fallback['not_eligible_total']:,} cannot:")
            lines.extend(f"    {count:,} {why}" for why, count in
                         fallback["not_eligible"].items())
        if fallback["sms_segments"]:
            lines.append(f"  at most {fallback['sms_segments']:,} SMS segments")
    lines.append("(the finish below is the first attempts'; retries and fallback come later)")
    return lines
