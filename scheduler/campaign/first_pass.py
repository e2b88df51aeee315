"""The plan's first pass for an exact A/B test share: the number of each recipient the plan
keeps, as :meth:`Plan._settle <scheduler.campaign.plan.Plan>` decides it (numbers, opt-outs,
duplicates, blanks, labels, consent, erasures, the ledger's suppression list; no rendering),
so that a row skipped later takes no variant's share (:mod:`scheduler.experiments.exact`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from scheduler.campaign.blanks import BlankRules
from scheduler.campaign.chunk_plan import ChunkPlanner
from scheduler.campaign.consent import ConsentGate
from scheduler.campaign.label_filter import LabelAudience
from scheduler.campaign.loader import Campaign
from scheduler.campaign.recipients import CsvLayout, read_chunks


class PlanParts(Protocol):
    """What the first pass reads of a :class:`~scheduler.campaign.plan.Plan`."""

    campaign: Campaign
    layout: CsvLayout
    phone_slug: str
    variable_slugs: list[str]
    blanks: BlankRules | None
    suppressed: set[str]
    labels: LabelAudience | None
    consent: ConsentGate | None
    erased: Callable[[str], str | None] | None
    listed: frozenset[str] | None
    chunk_rows: int
    strict: bool


def kept_numbers(plan: PlanParts) -> Iterator[str]:
    """Each kept recipient's number, once, in CSV order."""
    planner = ChunkPlanner(plan.campaign, plan.phone_slug, plan.variable_slugs, plan.blanks)
    labels, consent, erased, suppressed = plan.labels, plan.consent, plan.erased, plan.suppressed
    listed = plan.listed
    column = consent.slug if consent is not None and consent.slug is not None else ""
    seen: set[str] = set()
    for chunk in read_chunks(plan.campaign.recipients_file, plan.layout,
                             chunk_rows=plan.chunk_rows, label=str(planner.csv_label),
                             problems=None if plan.strict else []):
        opt_ins = chunk.columns[column] if column else None  # the consent column's values
        for row, digits, blank_skip in planner.numbers(chunk.first_row, chunk.columns,
                                                       chunk.blank):
            if digits is None or digits in suppressed or digits in seen:
                continue
            seen.add(digits)
            if blank_skip or (labels is not None and labels.reason(digits) is not None):
                continue
            if consent is not None and consent.basis(digits, {} if opt_ins is None else {
                    column: opt_ins[row - chunk.first_row]}) is None:
                continue
            if erased is not None and erased(digits) is not None:
                continue
            if listed is not None and digits in listed:  # the ledger's suppression list
                continue
            yield digits
