"""Rendering a campaign's variants, recipient by recipient (for the chunk planner).

Each valid recipient of a plain split gets a variant from
:func:`scheduler.experiments.variant_of` (the campaign's name and the normalised number);
with ``[experiment]``, the plan's first pass counts the test share
(:mod:`scheduler.experiments.exact`: exactly round(share × N) recipients, the variants
split by weight within one), and a recipient outside it is **held**: their rows are
stored ``held``, each varied step with every variant's payload (``choices``), so that the
decision only has to pick one (:mod:`scheduler.ledger.queries.experiments`). A recipient
in the test share (or of a plain split) has only their own variant rendered.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from scheduler.campaign.experiment_spec import ExperimentSpec
from scheduler.campaign.loader import Campaign
from scheduler.campaign.step_compile import CompiledStep, campaign_split
from scheduler.campaign.variants import Split
from scheduler.experiments import in_test_share, variant_of
from scheduler.experiments.exact import ExactSplit

#: A plan row's state while its recipient waits for the test's winner.
HELD = "held"


class Renderer(Protocol):
    """What renders one step's payload for a row."""

    def payload(self, ctx: dict[str, Any], to: str) -> dict[str, Any]:
        """The wire payload; raises a ``CampaignError`` when the row cannot be sent."""
        ...


def split_of(campaign: Campaign) -> Split | None:
    """The campaign's variants (None: it has none); the loader has checked them."""
    return campaign_split(campaign.steps)[0]


def experiment_of(campaign: Campaign) -> ExperimentSpec | None:
    """The campaign's ``[experiment]`` (None: a plain split, or no variants)."""
    return campaign.spec.experiment


class VariantRows:
    """Who gets which variant, and the varied steps' payloads (see the module)."""

    def __init__(self, campaign: Campaign, split: Split,
                 make: Callable[[CompiledStep], Renderer]) -> None:
        self.name = campaign.spec.name
        self.split = split
        self.pairs = split.pairs
        experiment = experiment_of(campaign)
        self.share = experiment.test_share if experiment is not None else None
        #: The counted test share (set by the plan's first pass; None: drawn per recipient).
        self.exact: ExactSplit | None = None
        self.renderers: dict[int, dict[str, Renderer | None]] = {
            step.index: {v.name: make(dataclasses.replace(step, tree=v.tree, variants=[]))
                         if v.ok and step.ok else None for v in step.variants}
            for step in campaign.steps if step.variants}

    @classmethod
    def of(cls, campaign: Campaign, make: Callable[[CompiledStep], Renderer]
           ) -> VariantRows | None:
        """The campaign's variant rows, or None when it has no variants."""
        split = split_of(campaign)
        return None if split is None else cls(campaign, split, make)

    def assign(self, digits: str) -> tuple[str, bool]:
        """The recipient's variant, and whether they are held for the winner."""
        if self.exact is not None:
            variant, in_test = self.exact.assign(digits)
            return variant, not in_test
        variant = variant_of(self.name, digits, self.pairs)
        held = self.share is not None and not in_test_share(self.name, digits, self.share)
        return variant, held

    def varies(self, index: int) -> bool:
        """Whether step ``index`` has variants."""
        return index in self.renderers

    def render(self, index: int, variant: str, held: bool, ctx: dict[str, Any],
               digits: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]] | None]:
        """(the payload of ``variant``, every variant's payload when ``held``); raises the
        first variant's ``CampaignError`` (the row is then skipped with it)."""
        renderers = self.renderers[index]
        if not held:
            return self._one(renderers[variant], ctx, digits), None
        choices = {name: self._one(renderer, ctx, digits)
                   for name, renderer in renderers.items()}
        return choices[variant], choices

    @staticmethod
    def _one(renderer: Renderer | None, ctx: dict[str, Any], to: str) -> dict[str, Any]:
        if renderer is None:
            from scheduler.campaign.exceptions import DefinitionError, Issue

            raise DefinitionError(Issue("", "the variant has errors in the campaign file"))
        return renderer.payload(ctx, to)


def count_split(rows: list[dict[str, Any]], step: int, test: Counter[str],
                rest: Counter[str]) -> None:
    """Count the recipients of a chunk per variant: in the test share (or a plain split)
    and held for the winner (their would-be variant is not stored: ``rest`` counts them
    under ``""``), by their rows of the first varied ``step``."""
    for row in rows:
        if row["step"] != step:
            continue
        if row["state"] == HELD:
            rest[""] += 1
        elif row["state"] == "planned" and row.get("variant") is not None:
            test[row["variant"]] += 1
