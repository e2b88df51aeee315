"""The plan's parts beyond the first sends, for ``campaign plan``'s report: A/B variants,
retries and the fallback, the steps that follow replies, the label filter."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.campaign.loader import Campaign
    from scheduler.campaign.plan import PlanStats
    from scheduler.settings.run import RunOptions


def later_parts(campaign: Campaign, stats: PlanStats, options: RunOptions,
                  start: datetime) -> dict[str, Any]:
    """The plan's parts beyond the first sends: A/B variants, retries and the fallback,
    steps that follow replies, the label filter."""
    from scheduler.commands.plan_branches import branches_report
    from scheduler.commands.plan_retries import retries_report
    from scheduler.commands.plan_variants import variants_report

    parts: dict[str, Any] = {
        "variants": variants_report(campaign, stats),
        "retries": retries_report(campaign, stats, options, start),
        "branches": branches_report(options.conversation, campaign.spec.steps, stats),
    }
    if stats.labels is not None:
        parts["label_filter"] = {**stats.labels.describe(), "kept": stats.valid,
                                 "not_labelled": stats.not_labelled,
                                 "excluded": stats.label_excluded}
    return parts
