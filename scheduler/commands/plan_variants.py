"""What ``campaign plan`` says of a campaign's variants: the split, the test share and the
smallest lift its test can find (:func:`scheduler.experiments.detectable_lift`)."""

from __future__ import annotations

from typing import Any

from scheduler.campaign.loader import Campaign
from scheduler.campaign.plan_stats import PlanStats
from scheduler.campaign.variant_render import experiment_of, split_of
from scheduler.experiments import detectable_lift
from scheduler.experiments.decision import rate_name


def variants_report(campaign: Campaign, stats: PlanStats) -> dict[str, Any] | None:
    """The plan report's ``variants`` (None: the campaign has none): each variant's weight,
    share and recipients sent at once; with ``[experiment]``, the test's settings, the
    recipients held for the winner and the smallest detectable lift."""
    split = split_of(campaign)
    if split is None:
        return None
    shares = split.shares()
    report: dict[str, Any] = {
        "control": split.control, "steps": list(split.steps),
        "variants": [{"name": name, "weight": weight, "share": shares[name],
                      "recipients": stats.variant_recipients[name]}
                     for name, weight in split.pairs],
    }
    experiment = experiment_of(campaign)
    if experiment is None:
        return report
    tested = sum(stats.variant_recipients.values())
    control_n = stats.variant_recipients[split.control]
    others = [stats.variant_recipients[n] for n in split.names if n != split.control]
    smallest = min(others, default=0)
    lift = None
    if control_n and smallest:
        lift = detectable_lift(control_n, smallest, experiment.expected_rate(),
                               confidence=experiment.confidence,
                               comparisons=len(split.names) - 1)
    report["experiment"] = {
        "test_share": experiment.test_share, "wait_s": experiment.wait,
        "metric": experiment.metric, "guardrail": experiment.guardrail,
        "confidence": experiment.confidence, "min_per_variant": experiment.min_per_variant,
        "no_winner": experiment.fallback(split.control), "test_recipients": tested,
        "held_recipients": stats.held_recipients, "base_rate": experiment.expected_rate(),
        "detectable_lift": lift.lift if lift is not None else None,
        "detectable": lift.sentence(rate_name(experiment.metric)) if lift is not None
        else "the test share has no recipient of some variant: nothing to test",
        "short": [name for name in split.names
                  if stats.variant_recipients[name] < experiment.min_per_variant],
    }
    return report


def variant_lines(report: dict[str, Any] | None) -> list[str]:
    """The plan's lines about its variants (each within 80 columns)."""
    if report is None:
        return []
    parts = " · ".join(f"{v['name']} {v['share']:.0%} ({v['recipients']:,})"
                       for v in report["variants"])
    test = report.get("experiment")
    if test is None:
        return [f"variants (a plain split, control {report['control']}): {parts}"]
    wait = test["wait_s"] / 3600
    lines = [f"A/B test: test share {test['test_share']:.0%} first: {parts}",
             f"  then {wait:g} h after its last send, the winner on the "
             f"{rate_name(test['metric'])} goes to the other {test['held_recipients']:,}"
             f" (no clear winner: {test['no_winner']})",
             f"  {test['detectable']}"]
    if test["short"]:
        lines.append(f"  ! under min_per_variant = {test['min_per_variant']:,}: "
                     f"{', '.join(test['short'])} (the test would not decide)")
    return _wrapped(lines)


def _wrapped(lines: list[str], width: int = 80) -> list[str]:
    """Lines cut at spaces to ``width``, continuations indented under their line."""
    import textwrap

    out: list[str] = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent) or [""]
    return out
