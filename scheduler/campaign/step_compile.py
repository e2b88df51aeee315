"""A campaign's steps compiled from the definition: each step's type and fields checked
against its endpoint's model, its template strings and ``X_file`` keys turned into leaves,
every problem collected (with the key's line) rather than raised at the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, time
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

from scheduler.campaign.bounds import body_checker
from scheduler.campaign.definition import BoundsSpec
from scheduler.campaign.exceptions import CampaignError, DefinitionError, Issue
from scheduler.campaign.products import ProductRef, product_ref
from scheduler.campaign.recycle_spec import step_recycle
from scheduler.campaign.rendering import (
    Leaf,
    compile_file_leaf,
    compile_leaf,
    is_template,
    placeholder_tree,
)
from scheduler.campaign.steps import (
    DISPATCHER_KEYS,
    PLACEHOLDER_TO,
    RESERVED_KEYS,
    StepKind,
    full_body,
    model_problems,
    step_kind,
    wire_names,
)
from scheduler.campaign.tomllines import line_of
from scheduler.campaign.variants import (
    Split,
    VariantTree,
    merged_fields,
    split_of,
    variant_tables,
)
from scheduler.core.units import parse_duration
from scheduler.settings.retry_rules import StepRecycle


@dataclass
class CompiledStep:
    """One step: its index, kind, delay after the previous step and its template tree.

    ``ok`` is false for a step with definition errors (only in a lenient load): its rows
    are not rendered, since every row would repeat the same error.
    """

    index: int
    kind: StepKind
    delay_s: float
    tree: dict[str, Any]
    ok: bool = True
    #: The catalog product the step shows (``product = {...}``), fetched at plan time.
    product: ProductRef | None = None
    #: Template variables of this step from the service (``product``), set at plan time.
    context: dict[str, Any] = field(default_factory=dict)
    #: The step's variants (``variants = [...]``), the first one's tree being ``tree``.
    variants: list[VariantTree] = field(default_factory=list)
    #: Whether the step's variants wrote a weight (the campaign's split takes it).
    weighted: bool = False
    #: The step's retry rules and ``min_talk`` (None: neither).
    recycle: StepRecycle | None = None
    #: Its key path when not ``steps[i]`` (the fallback's step: ``fallback.step``).
    name: str | None = None

    @property
    def trees(self) -> list[dict[str, Any]]:
        """The step's template trees: its own, and each other variant's."""
        return [self.tree, *(v.tree for v in self.variants[1:])]

    @property
    def key(self) -> str:
        """``steps[i]`` (or ``fallback.step``), the key path prefix of this step in the
        definition."""
        return self.name or f"steps[{self.index}]"



class Collector:
    """Issues found so far, with the most specific error class they share."""

    def __init__(self, label: str, lines: dict[str, int]) -> None:
        self.label = label
        self.lines = lines
        self.issues: list[Issue] = []
        self.classes: set[type[CampaignError]] = set()

    def add(self, message: str, key: str | None = None, **extra: Any) -> None:
        """Record a definition problem of the campaign file (at the key's line)."""
        extra.setdefault("line", line_of(self.lines, key))
        self.issues.append(Issue(self.label, message, key=key, **extra))
        self.classes.add(DefinitionError)

    def error(self) -> CampaignError:
        """One error with every issue: their shared class, else DefinitionError."""
        cls = next(iter(self.classes)) if len(self.classes) == 1 else DefinitionError
        return cls(self.issues)

    def absorb(self, error: CampaignError) -> None:
        """Record every issue of an error raised while checking (e.g. a template's)."""
        self.issues.extend(error.issues)
        self.classes.add(type(error))

    def raise_if_any(self) -> None:
        """Raise :meth:`error` when anything was found."""
        if self.issues:
            raise self.error()


def compile_tree(node: Any, key: str, env: SandboxedEnvironment, found: Collector) -> Any:
    """Replace template strings by leaves and ``X_file`` keys by file leaves named ``X``;
    a TOML date or time becomes its ISO text (a body carries text)."""
    if isinstance(node, date | time):  # datetime too
        return node.isoformat()
    if isinstance(node, str):
        if not is_template(node):
            return node
        try:
            return compile_leaf(
                env, node, key=key, file=found.label, line=line_of(found.lines, key)
            )
        except CampaignError as exc:
            found.absorb(exc)
            return node
    if isinstance(node, list):
        return [compile_tree(v, f"{key}[{i}]", env, found) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for name, value in node.items():
        sub = f"{key}.{name}"
        if name.endswith("_file") and isinstance(value, str):
            target = name[: -len("_file")]
            if target in node:
                found.add(f"give {target} or {name}, not both", sub)
                continue
            try:
                out[target] = compile_file_leaf(
                    env,
                    value,
                    key=f"{key}.{target}",
                    campaign_file=found.label,
                    line=line_of(found.lines, sub),
                )
            except CampaignError as exc:
                found.absorb(exc)
                out[target] = "0"
            continue
        out[name] = compile_tree(value, sub, env, found)
    return out


def step_delay(raw: Any) -> float:
    """Seconds of a step's ``delay`` (a duration string or a number of seconds)."""
    if isinstance(raw, bool):
        raise ValueError("delay must be a duration such as '10m' or a number of seconds")
    if isinstance(raw, int | float):
        if raw < 0:
            raise ValueError("delay must not be negative")
        return float(raw)
    if isinstance(raw, str):
        return parse_duration(raw)
    raise ValueError("delay must be a duration such as '10m' or a number of seconds")


def check_step(
    index: int,
    raw: Any,
    spec_channel: str,
    session: str,
    env: SandboxedEnvironment,
    found: Collector,
    bounds: BoundsSpec,
    timezone: str = "UTC",
    key: str | None = None,
) -> CompiledStep | None:
    """Compile one step of ``spec_channel`` (``key``: its key path when not ``steps[i]``),
    every problem recorded in ``found``; None when its type cannot be known."""
    name = key
    key = key or f"steps[{index}]"
    before = len(found.issues)
    if not isinstance(raw, dict):
        found.add("a step must be a table ([[steps]])", key)
        return None
    try:
        kind = step_kind(spec_channel, raw.get("type"), timezone=timezone, fields=raw)
    except ValueError as exc:
        found.add(str(exc), f"{key}.type")
        return None
    delay = 0.0
    if "delay" in raw:
        try:
            delay = step_delay(raw["delay"])
        except ValueError as exc:
            found.add(str(exc), f"{key}.delay")
    recycle, problems = step_recycle(raw, spec_channel, key)
    for where, message in problems:
        found.add(message, where)
    before += len(problems)  # the rows still render: only the rules are wrong
    product = None
    if "product" in raw:
        try:
            product = product_ref(raw["product"])
        except ValueError as exc:
            found.add(str(exc), f"{key}.product")
    for field_name in DISPATCHER_KEYS & raw.keys():
        found.add(f"{field_name} is set by the dispatcher; remove it from the step",
                  f"{key}.{field_name}")
    fields = {k: v for k, v in raw.items()
              if k not in RESERVED_KEYS | DISPATCHER_KEYS | {"variants"}}
    variants: list[VariantTree] = []
    weighted = False
    if "variants" in raw:
        tables, problems = variant_tables(raw["variants"], f"{key}.variants")
        for where, message in problems:
            found.add(message, where)
        weighted = any("weight" in table for _n, _w, table in tables)
        for i, (variant, weight, table) in enumerate(tables):
            mark = len(found.issues)
            tree = _body_tree(kind, merged_fields(fields, table), f"{key}.variants[{i}]",
                              session, env, found, bounds)
            variants.append(VariantTree(variant, weight, tree, ok=len(found.issues) == mark))
    tree = (variants[0].tree if variants
            else _body_tree(kind, fields, key, session, env, found, bounds))
    return CompiledStep(index, kind, delay, tree, ok=len(found.issues) == before,
                        product=product, variants=variants, weighted=weighted,
                        recycle=recycle, name=name)


def _body_tree(kind: StepKind, fields: dict[str, Any], key: str, session: str,
               env: SandboxedEnvironment, found: Collector, bounds: BoundsSpec
               ) -> dict[str, Any]:
    """A step's (or a variant's) body fields compiled and checked against the endpoint's
    model and the bounds, with templates replaced by placeholders."""
    tree = compile_tree(wire_names(kind, fields), key, env, found)
    constant = placeholder_tree(tree)
    for name, sample in kind.samples:  # a template: its rows are checked when rendered
        if isinstance(tree.get(name), Leaf):
            constant[name] = sample
    body = full_body(kind, constant, PLACEHOLDER_TO, session)
    for path, message in model_problems(kind, body):
        found.add(message, f"{key}.{path}" if path else key)
    checker = body_checker(kind.name, bounds)
    for path, message in checker(constant) if checker is not None else ():
        found.add(message.removeprefix("rendered "), f"{key}.{path}")
    return tree


def campaign_split(steps: list[CompiledStep]) -> tuple[Split | None, list[tuple[int, str]]]:
    """The campaign's variants and weights from its steps (see
    :mod:`scheduler.campaign.variants`), and the problems as ``(step index, message)``."""
    return split_of([(s.index, [(v.name, v.weight) for v in s.variants], s.weighted)
                     for s in steps])
