"""The per-chunk work of a plan: normalise numbers, render and validate every step.

It does not know about other chunks: duplicates and suppressed numbers are decided by the
plan (:mod:`scheduler.campaign.plan`), in CSV order, after this work. So a chunk can be
planned in another process: :func:`plan_chunk_in_worker` runs in a process pool whose
initializer loads the campaign once per worker. Render errors are returned as data (a
:class:`ChunkResult`), never raised, so they cross process boundaries intact.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scheduler.campaign.blanks import SKIP_REASON, BlankRules, blank_message
from scheduler.campaign.bounds import body_checker
from scheduler.campaign.exceptions import (
    CampaignError,
    InvalidRenderedBodyError,
    Issue,
)
from scheduler.campaign.fallback_render import FallbackRows
from scheduler.campaign.linetypes import LinePolicy
from scheduler.campaign.loader import Campaign, CompiledStep, load_campaign
from scheduler.campaign.options import recycle_options
from scheduler.campaign.phones import PhoneNormalizer
from scheduler.campaign.rendering import EmptyRender, Leaf, compile_tree, leaves
from scheduler.campaign.segments import sms_segments
from scheduler.campaign.steps import (
    PLACEHOLDER_SESSION,
    dump_payload,
    free_leaves,
    model_problems,
)
from scheduler.campaign.suggest import closest
from scheduler.campaign.variant_render import HELD, VariantRows
from scheduler.core.channel_terms import terms_of
from scheduler.experiments.exact import ExactSplit
from scheduler.links.render import LINK_ROW, LINK_STEP, LinkBinding

#: One non-blank CSV row: (row, index of its first plan row, digits — None when the number
#: is invalid or its line type unreachable —, region, why it is not sendable, raw value).
Recipient = tuple[int, int, str | None, str | None, str | None, str]
#: The reason of a step skipped because the definition has errors in it (validate only).
BROKEN_STEP = "step_error: the step has errors in the campaign file"
_UNDEFINED = re.compile(r"undefined variable: '(\w+)' is undefined$")


@dataclass
class ChunkResult:
    """Plan rows of a chunk (as if every valid number were new) and their recipients."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    recipients: list[Recipient] = field(default_factory=list)
    errors: dict[int, list[Issue]] = field(default_factory=dict)  # by CSV row
    planned: Counter[int] = field(default_factory=Counter)  # rows planned per step
    skipped: Counter[int] = field(default_factory=Counter)  # rows skipped per step
    sms_parts: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    unreachable: int = 0  # valid numbers of a line type the channel does not reach
    blank_skipped: set[int] = field(default_factory=set)  # rows [blanks] skips, by CSV row
    ninth_digit_added: int = 0
    #: An SMS fallback's (segments, encoding) per CSV row.
    fallback_parts: dict[int, tuple[int, str]] = field(default_factory=dict)


class _StepRenderer:
    """Renders one step for a row and validates it with the endpoint's model."""

    def __init__(self, step: CompiledStep, session: str, campaign: Campaign) -> None:
        self.step = step
        self.bounds = body_checker(step.kind.name, campaign.spec.bounds)
        self.kind = step.kind
        self.session = session
        self.validate = step.kind.model.__pydantic_validator__.validate_python
        self.render = compile_tree(step.tree)
        self.same_as_rendered: bool | None = None  # does the wire body equal the rendered tree?
        required = free_leaves(step, session)
        #: When every templated field takes any non-empty string unchanged, rows only need
        #: their required fields checked for emptiness: same verdict as the model, cheaper.
        self.quick = None if required is None else compile_tree(step.tree, required)
        #: Variables from the service for this step (``product``), over the row's own, and
        #: the step's index for ``link()`` (tracked links) when the campaign has any.
        self.extra = ({**step.context, LINK_STEP: step.index} if uses_links(campaign)
                      else step.context)

    def payload(self, ctx: dict[str, Any], to: str) -> dict[str, Any]:
        """The wire payload (no ``sessionId``/``to``); raises a ``TemplateError`` subclass."""
        if self.extra:
            ctx = {**ctx, **self.extra}
        body = self._payload(ctx, to)
        if self.bounds is not None:
            problems = self.bounds(body)
            if problems:
                raise InvalidRenderedBodyError(
                    [
                        Issue("", message, key=f"{self.step.key}.{path}")
                        for path, message in problems
                    ]
                )
        return body

    def _payload(self, ctx: dict[str, Any], to: str) -> dict[str, Any]:
        if self.quick is not None:
            try:
                return self.quick(ctx)
            except EmptyRender:
                pass  # the model says why, below
        rendered = self.render(ctx)
        body = dict(rendered)
        body["to"] = to
        if self.kind.has_session:
            body["sessionId"] = self.session
        try:
            model = self.validate(body)
        except ValidationError:
            raise InvalidRenderedBodyError(
                [
                    Issue(
                        "",
                        f"rendered {self.kind.name} is not valid: {message}",
                        key=f"{self.step.key}.{path}" if path else self.step.key,
                    )
                    for path, message in model_problems(self.kind, body)
                ]
            ) from None
        if self.same_as_rendered is None:
            dumped = dump_payload(model)
            self.same_as_rendered = json.dumps(dumped, sort_keys=True) == json.dumps(
                rendered, sort_keys=True
            )
            return dumped
        return rendered if self.same_as_rendered else dump_payload(model)


def uses_links(campaign: Campaign) -> bool:
    """Whether any template of the campaign calls ``link()``."""
    return any(leaf.links for step in campaign.steps for tree in step.trees
               for leaf in leaves(tree))


def _leaf_variables(node: Any) -> set[str]:
    if isinstance(node, Leaf):
        return set(node.variables)
    values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return set().union(*(_leaf_variables(v) for v in values))


class ChunkPlanner:
    """Everything needed to plan one chunk, built once per process."""

    def __init__(self, campaign: Campaign, phone_slug: str, variable_slugs: list[str],
                 blanks: BlankRules | None = None) -> None:
        self.campaign = campaign
        self.blanks = blanks if blanks else None
        self.csv_label = str(campaign.recipients_file)
        self.phone_slug = phone_slug
        self.slugs = variable_slugs
        spec = campaign.spec.recipients
        self.normalizer = PhoneNormalizer(
            spec.default_country, add_ninth_digit=spec.add_ninth_digit
        )
        self.lines = LinePolicy(campaign.spec.channel, spec.line_types)
        self.renderers = [
            _StepRenderer(s, campaign.preview_session, campaign) if s.ok else None
            for s in campaign.steps
        ]
        #: Each recipient's variant and, with [experiment], whether they wait (held).
        self.variants = VariantRows.of(
            campaign, lambda s: _StepRenderer(s, campaign.preview_session, campaign))
        recycle = recycle_options(campaign)
        #: Steps whose rows wait for a verdict on their outcome (retry rules, fallback).
        self.watched = frozenset(s.index for s in campaign.steps
                                 if recycle is not None and recycle.watches(s.index))
        #: The [fallback] step, rendered onto each recipient's step-0 row.
        self.fallback = FallbackRows.of(
            campaign, lambda s: _StepRenderer(s, PLACEHOLDER_SESSION, campaign))
        #: A skipped row's keys of second chances (none for a campaign without them).
        self.no_verdict: dict[str, Any] = {"watch": None, "fallback": None} \
            if self.watched else {}
        self.needs_to = "to" in set().union(*(_leaf_variables(s.tree) for s in campaign.steps))
        self.links = uses_links(campaign)
        self.sms = terms_of(campaign.spec.channel).segments
        self.columns = ", ".join([*variable_slugs, "to"])
        self._undefined: dict[str, str] = {}  # message per missing name (rows repeat it)

    def _issue(self, issue: Issue, row: int) -> Issue:
        """A render problem of ``row``, with its file, line and, for an undefined variable,
        the names the row does have."""
        label = self.campaign.label
        file = issue.file or label
        line = issue.line
        if line is None and file == label:
            line = self.campaign.line_of(issue.key)
        message = issue.message
        missing = _UNDEFINED.match(message)
        if missing is not None:
            message = self._undefined_message(missing.group(1))
        elif message.startswith("undefined variable"):
            message += f" (the CSV's columns, as template names: {self.columns})"
        return Issue(file, message, key=issue.key, row=row, line=line)

    def _undefined_message(self, name: str) -> str:
        """What to say about a name no column has: the closest column and the rule."""
        if name not in self._undefined:
            hint = closest(name, [*self.slugs, "to"])
            self._undefined[name] = (
                f"undefined variable {name!r}: no column of the CSV has this template name"
                + (f"; did you mean {hint!r}?" if hint else "")
                + f" (its columns, as template names: {self.columns}; a header becomes its "
                "template name in lower case, without accents, with _ for spaces and "
                "other characters)"
            )
        return self._undefined[name]

    def numbers(self, first_row: int, columns: dict[str, list[str]], blank: list[bool]
                ) -> list[tuple[int, str | None, bool]]:
        """(row, digits — None when invalid or unreachable —, whether ``[blanks]`` skips
        it) of each non-blank line: what :meth:`plan` decides before rendering (the plan's
        first pass for an exact test share)."""
        found: list[tuple[int, str | None, bool]] = []
        numbers = self.normalizer.normalize_many(columns[self.phone_slug])
        values = [columns[s] for s in self.slugs]
        for i, is_blank in enumerate(blank):
            if is_blank:
                continue
            digits, _region, _why, line_type, _added = numbers[i]
            if digits is not None and self.lines.reason(line_type) is not None:
                digits = None
            skip = False
            if digits is not None and self.blanks is not None:
                verdict = self.blanks.apply(dict(zip(self.slugs, [c[i] for c in values],
                                                     strict=True)))
                skip = verdict is not None and verdict.skip is not None
            found.append((first_row + i, digits, skip))
        return found

    def plan(self, first_row: int, columns: dict[str, list[str]], blank: list[bool]) -> ChunkResult:
        """Rows of every non-blank line: skipped for invalid numbers, else rendered."""
        result = ChunkResult()
        rows, recipients = result.rows, result.recipients
        phones = columns[self.phone_slug]
        numbers = self.normalizer.normalize_many(phones)
        slugs = self.slugs
        # each line's values as one tuple, zipped once per chunk (not a list per line)
        lines = (list(zip(*(columns[s] for s in slugs), strict=True)) if slugs
                 else [()] * len(blank))
        steps = [
            (r, s.index, s.kind.name, s.kind.path)
            for r, s in zip(self.renderers, self.campaign.steps, strict=True)
        ]
        unreachable = self.lines.reason
        planned = result.planned
        for i, is_blank in enumerate(blank):
            if is_blank:
                continue
            row = first_row + i
            variables = dict(zip(slugs, lines[i], strict=True))
            digits, region, why, line_type, added = numbers[i]
            reason = None
            if digits is None:
                reason = f"invalid_number: {why}"
            elif (why := unreachable(line_type)) is not None:
                reason = why
                result.unreachable += 1
            result.ninth_digit_added += added
            recipients.append((row, len(rows), None if reason else digits, region, why, phones[i]))
            if reason is not None:
                self._skip_all(result, steps, row, digits or phones[i], variables, reason, region)
                continue
            assert digits is not None  # no reason to skip: the number was normalised
            blank_reason = None if self.blanks is None else self._blanks(result, row, variables)
            ctx: dict[str, Any] = {**variables, "to": digits} if self.needs_to else variables
            if self.links:  # link() signs for this recipient (scheduler.links.render)
                ctx = {**ctx, LINK_ROW: (row, digits)}
            variants = self.variants
            variant, held = variants.assign(digits) if variants is not None else (None, False)
            for renderer, index, kind, path in steps:
                state, reason = "planned", blank_reason
                payload: dict[str, Any] = {}
                choices = None
                if reason is not None:
                    state = "skipped"
                elif renderer is None:
                    state, reason = "skipped", BROKEN_STEP
                else:
                    try:
                        if variant is not None and variants is not None \
                                and variants.varies(index):
                            payload, choices = variants.render(index, variant, held, ctx,
                                                               digits)
                        else:
                            payload = renderer.payload(ctx, digits)
                    except CampaignError as exc:
                        issues = [self._issue(issue, row) for issue in exc.issues]
                        result.errors.setdefault(row, []).extend(issues)
                        state, reason = "skipped", f"render_error: {issues[0].message}"
                if state == "planned":
                    planned[index] += 1
                else:
                    result.skipped[index] += 1
                if self.sms and state == "planned":
                    seg = sms_segments(payload["text"])
                    result.sms_parts.setdefault(row, []).append((index, seg.parts, seg.encoding))
                item = {
                    "row": row,
                    "to": digits,
                    "step": index,
                    "kind": kind,
                    "path": path,
                    "payload": payload,
                    "variables": variables,
                    "state": state,
                    "reason": reason,
                    "region": region,
                }
                if variants is not None:  # the recipient's variant; held: every variant's
                    item["variant"] = None if held else variant
                    item["choices"] = choices if state == "planned" else None
                    if held and state == "planned":
                        item["state"] = HELD
                if self.watched:  # rows of other campaigns stay small (10 keys fit a dict)
                    live = state == "planned"
                    item["watch"] = 1 if live and index in self.watched else None
                    item["fallback"] = None
                    if live and index == 0 and self.fallback is not None:
                        item["fallback"] = self._fallback(result, row, ctx, digits, line_type)
                rows.append(item)
        return result

    def _skip_all(self, result: ChunkResult, steps: list[tuple[Any, int, str, str]], row: int,
                  to: str, variables: dict[str, str], reason: str, region: str | None) -> None:
        """Every step of a row that cannot be sent (its number), skipped with ``reason``."""
        for _renderer, index, kind, path in steps:
            result.skipped[index] += 1
            result.rows.append({"row": row, "to": to, "step": index, "kind": kind, "path": path,
                                "payload": {}, "variables": variables, "state": "skipped",
                                "reason": reason, "region": region, **self.no_verdict})

    def _blanks(self, result: ChunkResult, row: int, variables: dict[str, str]) -> str | None:
        """The skip reason of a row its blanks skip or find wrong (errors recorded); None."""
        assert self.blanks is not None
        verdict = self.blanks.apply(variables)
        if verdict is None:
            return None
        if verdict.skip is not None:
            result.blank_skipped.add(row)
        else:
            result.errors.setdefault(row, []).extend(
                Issue(self.csv_label, blank_message(r), key=r.key, row=row)
                for r in verdict.errors)
        return f"{SKIP_REASON}: {(verdict.skip or verdict.errors[0]).header}"

    def _fallback(self, result: ChunkResult, row: int, ctx: dict[str, Any], digits: str,
                  line_type: str | None) -> dict[str, Any] | None:
        """The row's ``fallback`` (see :mod:`scheduler.campaign.fallback_render`); a render
        error is an error of the row, at ``fallback.step``."""
        assert self.fallback is not None
        try:
            value, parts = self.fallback.value(ctx, digits, line_type)
        except CampaignError as exc:
            result.errors.setdefault(row, []).extend(self._issue(i, row) for i in exc.issues)
            return None
        if parts is not None:
            result.fallback_parts[row] = parts
        return value


_WORKER: ChunkPlanner | None = None


def init_worker(campaign_path: str, phone_slug: str, variable_slugs: list[str],
                blanks: BlankRules | None = None,
                contexts: list[dict[str, Any]] | None = None,
                links: LinkBinding | None = None, exact: ExactSplit | None = None) -> None:
    """Process-pool initializer: load and compile the campaign once in this worker, with
    the steps' variables from the service (``contexts``, read once by the parent), the
    parent's tracked-link binding (``links``) and its counted test share (``exact``)."""
    global _WORKER
    campaign = load_campaign(Path(campaign_path))
    if links is not None:
        campaign.linker.bind(links)
    for step, context in zip(campaign.steps, contexts or [], strict=False):
        step.context = context
    _WORKER = ChunkPlanner(campaign, phone_slug, variable_slugs, blanks)
    if _WORKER.variants is not None:
        _WORKER.variants.exact = exact


def plan_chunk_in_worker(
    first_row: int, columns: dict[str, list[str]], blank: list[bool]
) -> ChunkResult:
    """Process-pool task: plan one chunk with the worker's campaign."""
    assert _WORKER is not None, "init_worker was not run"
    return _WORKER.plan(first_row, columns, blank)
