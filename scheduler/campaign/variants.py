"""A step's variants: ``variants = [{name = "A", text = "…"}, {name = "B", text_file = "…",
weight = 2}]``.

Each variant's table holds ``name``, an optional ``weight`` (1 by default) and body fields
that override the step's own (``text`` and ``text_file`` are one field: a variant giving
either replaces the step's). Every varied step of a campaign names the same variants; the
first step that gives a weight sets it (other steps give the same weights or none). The
first variant of the first varied step is the **control**. Who gets which variant is drawn
per recipient from SHA-256 of the campaign's name and the normalised number
(:func:`scheduler.experiments.variant_of`), so a recipient gets the same variant in every
step, process, worker, resume and ``--replan``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scheduler.campaign.experiment_spec import ExperimentSpec

#: Keys of a variant's table that are not body fields.
VARIANT_KEYS = frozenset({"name", "weight"})
#: Keys a variant may not set (they belong to the step).
STEP_ONLY_KEYS = frozenset({"type", "delay", "product", "variants"})


@dataclass
class VariantTree:
    """One variant of a step: its name, weight and compiled template tree."""

    name: str
    weight: float
    tree: dict[str, Any]
    #: Whether the variant's body compiled without problems.
    ok: bool = True


@dataclass(frozen=True)
class Split:
    """The campaign's variants, in order, with their weights; the first is the control."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    #: The steps (indexes) that have variants.
    steps: tuple[int, ...]

    @property
    def control(self) -> str:
        """The first variant."""
        return self.names[0]

    @property
    def pairs(self) -> list[tuple[str, float]]:
        """``(name, weight)`` pairs, as :func:`scheduler.experiments.variant_of` takes them."""
        return list(zip(self.names, self.weights, strict=True))

    def shares(self) -> dict[str, float]:
        """Each variant's expected share of the recipients."""
        total = math.fsum(self.weights)
        return {name: weight / total for name, weight in self.pairs}


def _target(name: str) -> str:
    """``text_file`` → ``text``: the body field a key sets."""
    return name.removesuffix("_file")


def merged_fields(base: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """The step's body fields with a variant's over them (``X`` and ``X_file`` are one)."""
    overridden = {_target(k) for k in variant}
    out = {k: v for k, v in base.items() if _target(k) not in overridden}
    out.update({k: v for k, v in variant.items() if k not in VARIANT_KEYS})
    return out


def variant_tables(raw: Any, key: str) -> tuple[list[tuple[str, float, dict[str, Any]]],
                                                 list[tuple[str, str]]]:
    """``(name, weight, table)`` of each variant of a step's ``variants`` value, and the
    problems found as ``(key, message)``."""
    problems: list[tuple[str, str]] = []
    if not isinstance(raw, list) or not raw:
        return [], [(key, "variants must be a list of tables, such as "
                          '[{name = "A", text = "…"}, {name = "B", text = "…"}]')]
    found: list[tuple[str, float, dict[str, Any]]] = []
    for i, table in enumerate(raw):
        where = f"{key}[{i}]"
        if not isinstance(table, dict):
            problems.append((where, "a variant must be a table such as "
                                    '{name = "A", text = "…"}'))
            continue
        name = table.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.append((f"{where}.name", "every variant needs a name, such as \"A\""))
            continue
        name = name.strip()
        if any(name == other for other, _w, _t in found):
            problems.append((f"{where}.name", f"variant {name!r} is named twice"))
            continue
        weight = table.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int | float) \
                or not math.isfinite(weight) or weight < 0:
            problems.append((f"{where}.weight", f"weight {weight!r} must be a number of 0 "
                                                "or more"))
            continue
        for bad in sorted(STEP_ONLY_KEYS & table.keys()):
            problems.append((f"{where}.{bad}", f"{bad} belongs to the step, not a variant"))
        found.append((name, float(weight), table))
    if not problems and len(found) < 2:
        problems.append((key, "give at least two variants (the first is the control)"))
    if not problems and not any(w > 0 for _n, w, _t in found):
        problems.append((key, "every variant has weight 0: at least one must be above 0"))
    return found, problems


def split_of(steps: list[tuple[int, list[tuple[str, float]], bool]]) -> tuple[
        Split | None, list[tuple[int, str]]]:
    """The campaign's split from its varied steps ``(index, [(name, weight)], weighted)``
    (``weighted``: the step wrote a weight), and the problems as ``(step, message)``."""
    varied = [(index, pairs, weighted) for index, pairs, weighted in steps if pairs]
    if not varied:
        return None, []
    problems: list[tuple[int, str]] = []
    first_index, first, _ = varied[0]
    names = [name for name, _w in first]
    weighted = [(index, pairs) for index, pairs, has in varied if has]
    weights = dict(weighted[0][1] if weighted else first)
    for index, pairs, has in varied[1:]:
        if sorted(name for name, _w in pairs) != sorted(names):
            problems.append((index, "every varied step names the same variants: step "
                             f"{first_index + 1} has {', '.join(names)}, this one "
                             f"{', '.join(name for name, _w in pairs)}"))
        elif has and dict(pairs) != weights:
            problems.append((index, "the variants' weights differ from an earlier step's; "
                             "give them in one step only"))
    split = Split(tuple(names), tuple(weights[name] for name in names),
                  tuple(index for index, _p, _h in varied))
    return split, problems


def experiment_problem(split: Split | None, experiment: ExperimentSpec | None) -> str | None:
    """What is wrong with ``[experiment]`` given the variants, or None."""
    if experiment is None:
        return None
    if split is None:
        return ("[experiment] needs variants: give a step variants = [{name = \"A\", …}, "
                "{name = \"B\", …}]")
    fallback = experiment.fallback(split.control)
    if fallback not in split.names:
        return (f"no_winner {experiment.no_winner!r} is not \"control\" nor a variant "
                f"({', '.join(split.names)})")
    return None
