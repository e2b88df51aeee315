"""What the ledger stores of a campaign's A/B test when it plans a run."""

from __future__ import annotations

from scheduler.campaign.loader import Campaign
from scheduler.campaign.variant_render import experiment_of, split_of
from scheduler.ledger.rows import ExperimentPlan


def experiment_plan(campaign: Campaign) -> ExperimentPlan | None:
    """The campaign's test (variants, control, settings) for the ledger; None without
    ``[experiment]`` (a plain split needs no test)."""
    split, experiment = split_of(campaign), experiment_of(campaign)
    if split is None or experiment is None:
        return None
    settings = {"step": split.steps[0], "test_share": experiment.test_share,
                "wait_s": experiment.wait, "metric": experiment.metric,
                "guardrail": experiment.guardrail,
                "min_per_variant": experiment.min_per_variant,
                "confidence": experiment.confidence,
                "fallback": experiment.fallback(split.control)}
    return ExperimentPlan(variants=split.pairs, control=split.control, settings=settings)
