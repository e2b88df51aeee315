"""The plan: every recipient of a campaign, normalised, de-duplicated, checked and rendered.

Contract with the ledger (``scheduler/ledger``)::

    campaign = load_campaign(path)               # raises CampaignError listing every problem
    plan = build_plan(campaign, chunk_rows=50_000)
    for rows in plan.chunks():                   # lists of plain dicts, streamed
        ...                                      # one dict per (recipient, step)
    plan.stats                                   # complete once chunks() is exhausted

Each row, in CSV order then step order: ``row`` (1-based CSV data row), ``to`` (normalised
digits, or the raw value when invalid), ``step`` (0-based), ``kind`` (``"text"``, …,
``"sms"``, ``"voice"``), ``path`` (endpoint), ``payload`` (the rendered wire body without
``sessionId`` and ``to``; ``{}`` when skipped), ``variables`` (the row's CSV columns by slug,
the phone column excepted), ``state`` (``"planned"`` or ``"skipped"``), ``reason`` (``None``,
``"invalid_number: …"``, ``"duplicate"``, ``"suppressed"``, or ``"render_error: …"`` when not
strict) and ``region`` (phone region code such as ``"BR"``). A skipped recipient has one
skipped row per step. Order of checks: invalid, suppressed, duplicate (the first occurrence
of a number is kept).

With ``strict=True`` (the default, for storing a run) the first template or body error
raises; with ``strict=False`` (``campaign validate``) errors are collected in
``plan.stats.errors`` with their rows. Memory: one chunk of rows plus the set of numbers
seen (for duplicates) and the suppression set.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scheduler.campaign.exceptions import (
    CampaignError,
    EmptyRecipientsFile,
    InvalidRenderedBodyError,
    Issue,
)
from scheduler.campaign.loader import Campaign, CompiledStep, load_campaign
from scheduler.campaign.phones import PhoneNormalizer
from scheduler.campaign.recipients import (
    CsvLayout,
    RowChunk,
    find_column,
    iter_phone_values,
    read_chunks,
    read_layout,
)
from scheduler.campaign.rendering import render_tree
from scheduler.campaign.segments import sms_segments
from scheduler.campaign.steps import dump_payload, full_body, model_problems

__all__ = ["Plan", "PlanStats", "build_plan", "load_campaign"]

MAX_INVALID_LISTED = 10_000
MAX_SAME_ERROR = 20


@dataclass
class PlanStats:
    """Counts of a plan, complete once its chunks have all been read."""

    read: int = 0
    valid: int = 0
    duplicates: int = 0
    suppressed: int = 0
    invalid_total: int = 0
    invalid: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    error_total: int = 0
    planned_per_step: Counter[int] = field(default_factory=Counter)
    skipped_per_step: Counter[int] = field(default_factory=Counter)
    recipients_per_sender: Counter[str] = field(default_factory=Counter)
    sms_segments_per_step: Counter[int] = field(default_factory=Counter)
    sms_encodings: Counter[str] = field(default_factory=Counter)
    _same_error: Counter[tuple[str | None, str]] = field(default_factory=Counter, repr=False)

    def recipients_json(self) -> dict[str, Any]:
        """The ``recipients`` object of ``campaign validate --json``."""
        return {
            "read": self.read,
            "valid": self.valid,
            "duplicates": self.duplicates,
            "suppressed": self.suppressed,
            "invalid": list(self.invalid),
            "invalid_total": self.invalid_total,
        }

    def add_error(self, issue: Issue) -> None:
        """Keep an error; past :data:`MAX_SAME_ERROR` of the same kind only count it."""
        self.error_total += 1
        kind = (issue.key, issue.message)
        self._same_error[kind] += 1
        if self._same_error[kind] <= MAX_SAME_ERROR:
            self.errors.append(issue)

    def finish(self) -> None:
        """Summarise errors that were only counted."""
        for (key, message), count in self._same_error.items():
            if count > MAX_SAME_ERROR:
                file = next(e.file for e in self.errors if (e.key, e.message) == (key, message))
                self.errors.append(
                    Issue(file, f"… and {count - MAX_SAME_ERROR} more rows: {message}", key=key)
                )
        self._same_error.clear()


class _StepRenderer:
    """Renders one step for a row and validates it with the endpoint's model."""

    def __init__(self, step: CompiledStep, session: str) -> None:
        self.step = step
        self.kind = step.kind
        self.session = session
        self.same_as_rendered: bool | None = None  # does wire_body equal the rendered tree?

    def payload(self, ctx: dict[str, Any], to: str) -> dict[str, Any]:
        """The wire payload (no ``sessionId``/``to``); raises a ``TemplateError`` subclass."""
        rendered = render_tree(self.step.tree, ctx)
        body = full_body(self.kind, rendered, to, self.session)
        try:
            model = self.kind.model.model_validate(body)
        except ValidationError:
            problems = model_problems(self.kind, body)
            raise InvalidRenderedBodyError([
                Issue("", f"rendered {self.kind.name} is not valid: {message}",
                      key=f"{self.step.key}.{path}" if path else self.step.key)
                for path, message in problems
            ]) from None  # fmt: skip
        if self.same_as_rendered is None:
            dumped = dump_payload(model)
            self.same_as_rendered = json.dumps(dumped, sort_keys=True) == json.dumps(
                rendered, sort_keys=True
            )
            return dumped
        return rendered if self.same_as_rendered else dump_payload(model)


class Plan:
    """A campaign's deliveries, streamed in chunks (see the module doc for the row keys)."""

    def __init__(
        self,
        campaign: Campaign,
        layout: CsvLayout,
        phone_slug: str,
        suppressed: set[str],
        *,
        chunk_rows: int = 50_000,
        strict: bool = True,
    ) -> None:
        self.campaign = campaign
        self.layout = layout
        self.phone_slug = phone_slug
        self.suppressed = suppressed
        self.chunk_rows = chunk_rows
        self.strict = strict
        self.stats = PlanStats()
        self.complete = False
        self.variable_slugs = [s for s in layout.slugs if s != phone_slug]
        self._needs_to = any("to" in leaf_vars for leaf_vars in self._leaf_variables())

    def _leaf_variables(self) -> Iterator[frozenset[str]]:
        from scheduler.campaign.rendering import Leaf

        def walk(node: Any) -> Iterator[frozenset[str]]:
            if isinstance(node, Leaf):
                yield node.variables
            elif isinstance(node, dict):
                for value in node.values():
                    yield from walk(value)
            elif isinstance(node, list):
                for value in node:
                    yield from walk(value)

        for step in self.campaign.steps:
            yield from walk(step.tree)

    @property
    def steps(self) -> list[CompiledStep]:
        """The campaign's compiled steps."""
        return self.campaign.steps

    def chunks(self) -> Iterator[list[dict[str, Any]]]:
        """Lists of plan rows, in CSV order then step order; resets :attr:`stats`."""
        self.stats = PlanStats()
        self.complete = False
        normalizer = PhoneNormalizer(self.campaign.spec.recipients.default_country)
        renderers = [_StepRenderer(s, self.campaign.preview_session) for s in self.steps]
        seen: set[str] = set()
        label = str(self.campaign.recipients_file)
        for chunk in read_chunks(self.campaign.recipients_file, self.layout,
                                 chunk_rows=self.chunk_rows, label=label):  # fmt: skip
            rows = self._rows(chunk, normalizer, renderers, seen, label)
            if rows:
                yield rows
        self.stats.finish()
        self.complete = True

    def consume(self) -> PlanStats:
        """Read every chunk (discarding the rows) and return the complete stats."""
        for _rows in self.chunks():
            pass
        return self.stats

    def _rows(self, chunk: RowChunk, normalizer: PhoneNormalizer,
              renderers: list[_StepRenderer], seen: set[str], label: str,
              ) -> list[dict[str, Any]]:  # fmt: skip
        stats, steps = self.stats, self.steps
        senders = self.campaign.senders
        phones = chunk.columns[self.phone_slug]
        numbers = normalizer.normalize_many(phones)
        slugs = self.variable_slugs
        columns = [chunk.columns[s] for s in slugs]
        sms = self.campaign.spec.channel == "sms"
        out: list[dict[str, Any]] = []
        for i, blank in enumerate(chunk.blank):
            if blank:
                continue
            row = chunk.first_row + i
            stats.read += 1
            variables = dict(zip(slugs, [col[i] for col in columns], strict=True))
            digits, region, why = numbers[i]
            reason: str | None = None
            if digits is None:
                reason = f"invalid_number: {why}"
                stats.invalid_total += 1
                if len(stats.invalid) < MAX_INVALID_LISTED:
                    stats.invalid.append({"row": row, "value": phones[i], "reason": why})
            elif digits in self.suppressed:
                reason = "suppressed"
                stats.suppressed += 1
            elif digits in seen:
                reason = "duplicate"
                stats.duplicates += 1
            if reason is not None:
                to = digits or phones[i]
                for step in steps:
                    stats.skipped_per_step[step.index] += 1
                    out.append({"row": row, "to": to, "step": step.index,
                                "kind": step.kind.name, "path": step.kind.path, "payload": {},
                                "variables": variables, "state": "skipped", "reason": reason,
                                "region": region})  # fmt: skip
                continue
            seen.add(digits)  # type: ignore[arg-type]
            stats.recipients_per_sender[senders[stats.valid % len(senders)]] += 1
            stats.valid += 1
            ctx = {**variables, "to": digits} if self._needs_to else variables
            for renderer in renderers:
                step = renderer.step
                state, reason, payload = "planned", None, {}
                try:
                    payload = renderer.payload(ctx, digits)  # type: ignore[arg-type]
                except CampaignError as exc:
                    issues = [Issue(issue.file or self.campaign.label, issue.message, key=issue.key,
                                    row=row, line=issue.line) for issue in exc.issues]  # fmt: skip
                    if self.strict:
                        raise type(exc)(issues) from None
                    for issue in issues:
                        stats.add_error(issue)
                    state, reason = "skipped", f"render_error: {issues[0].message}"
                if state == "planned":
                    stats.planned_per_step[step.index] += 1
                    if sms:
                        seg = sms_segments(payload["text"])
                        stats.sms_segments_per_step[step.index] += seg.parts
                        stats.sms_encodings[seg.encoding] += 1
                else:
                    stats.skipped_per_step[step.index] += 1
                out.append({"row": row, "to": digits, "step": step.index,
                            "kind": step.kind.name, "path": step.kind.path, "payload": payload,
                            "variables": variables, "state": state, "reason": reason,
                            "region": region})  # fmt: skip
        return out


def load_suppression(campaign: Campaign) -> set[str]:
    """Every number of the campaign's suppression lists, normalised (invalid ones ignored)."""
    normalizer = PhoneNormalizer(campaign.spec.recipients.default_country)
    numbers: set[str] = set()
    for path in campaign.suppression_files:
        for value in iter_phone_values(path):
            digits = normalizer.normalize(value).digits
            if digits:
                numbers.add(digits)
    return numbers


def build_plan(campaign: Campaign | Path | str, *, chunk_rows: int = 50_000,
               strict: bool = True) -> Plan:  # fmt: skip
    """Check the recipients file's layout and the suppression lists, and return the plan."""
    if not isinstance(campaign, Campaign):
        campaign = load_campaign(campaign)
    label = str(campaign.recipients_file)
    layout = read_layout(campaign.recipients_file, label=label)
    if not layout.has_rows:
        raise EmptyRecipientsFile("the file has a header and no rows", file=label)
    index = find_column(layout, campaign.spec.recipients.phone_column, label=label,
                        key="recipients.phone_column")  # fmt: skip
    suppressed = load_suppression(campaign)
    return Plan(campaign, layout, layout.slugs[index], suppressed,
                chunk_rows=chunk_rows, strict=strict)  # fmt: skip
