"""``campaign plan``'s branches: the steps that follow replies, drawn as a tree with the
recipients each is expected to reach at the campaign's ``[replies] expected_rate``.

The estimate: a step without a condition reaches the recipients its previous step
reaches; ``replied`` the expected rate of those its looked-at step reaches,
``reply_matches`` an even share of that among the ``reply_matches`` steps looking at the
same step, ``not_replied`` the rest; a read or click condition is not estimated (it says
"up to" the looked-at step's count).
"""

from __future__ import annotations

import textwrap
from typing import Any

from scheduler.settings.conversation import ConversationOptions, StepCondition


def _share(cond: StepCondition, options: ConversationOptions) -> float | None:
    rate = options.expected_rate
    if cond.kind == "replied":
        return rate
    if cond.kind == "not_replied":
        return 1 - rate
    if cond.kind == "reply_matches":
        siblings = [c for c in options.conditions
                    if c.kind == "reply_matches" and c.looks_at == cond.looks_at]
        return rate / max(len(siblings), 1)
    return None


def branches_report(options: ConversationOptions | None, steps: list[Any],
                    stats: Any) -> dict[str, Any] | None:
    """The branches' JSON (None: no step has a condition): per step of ``steps`` (the
    definition's tables), what it looks at, its condition and its expected recipients
    (``stats``: the plan's, whose step 0 count is the start)."""
    if options is None:
        return None
    names = [s.get("name") if isinstance(s, dict) else None for s in steps]
    return branches_of(options, names, stats.planned_per_step[0])


def branches_of(options: ConversationOptions, names: list[str | None],
                first: int) -> dict[str, Any]:
    """:func:`branches_report` from the steps' names and step 0's planned recipients."""
    expected: list[float] = []
    steps = []
    for index, name in enumerate(names):
        cond = options.condition(index)
        share: float | None = None
        if index == 0:
            count: float | None = float(first)
        elif cond is None:
            count = expected[index - 1]
        else:
            share = _share(cond, options)
            looked = expected[cond.looks_at]
            count = None if share is None else looked * share
        expected.append(count if count is not None else expected[cond.looks_at]
                        if cond is not None else 0.0)
        steps.append({"step": index, "name": name,
                      "looks_at": cond.looks_at if cond else (index - 1 if index else None),
                      "when": cond.text if cond else None,
                      "expected": None if count is None else round(count),
                      "up_to": None if count is not None else round(expected[index])})
    return {"expected_rate": options.expected_rate, "steps": steps}


def _label(step: dict[str, Any]) -> str:
    return f"step {step['step']}" + (f" {step['name']!r}" if step["name"] else "")


def branch_lines(report: dict[str, Any] | None) -> list[str]:
    """The branches as a tree, one step a line (empty: no branches)."""
    if not report:
        return []
    steps = report["steps"]
    children: dict[int, list[dict[str, Any]]] = {}
    for step in steps[1:]:
        children.setdefault(step["looks_at"], []).append(step)
    lines = [f"branches at a {report['expected_rate']:.0%} reply rate ([replies] "
             "expected_rate):"]

    def count(step: dict[str, Any]) -> str:
        if step["expected"] is None:
            return f"up to {step['up_to']:,}"
        return f"≈ {step['expected']:,}"

    def walk(step: dict[str, Any], prefix: str, last: bool, top: bool) -> None:
        mark = "" if top else ("└ " if last else "├ ")
        lines.append(f"  {prefix}{mark}{_label(step)}: {count(step)}")
        inner = prefix + ("" if top else ("  " if last else "│ "))
        kids = children.get(step["step"], [])
        if not top:
            when = f"when {step['when']}" if step["when"] else "follows the step before"
            bar = "│ " if kids else "  "
            for part in textwrap.wrap(when, max(30, 76 - len(inner))):
                lines.append(f"  {inner}{bar}{part}")
        for i, kid in enumerate(kids):
            walk(kid, inner, i == len(kids) - 1, False)

    walk(steps[0], "", True, True)
    return lines


def step_estimates(report: dict[str, Any] | None) -> dict[int, str]:
    """The step table's counts of the steps that depend on a condition (theirs, or one
    before them on their branch), as the tree has them: ``≈ 2`` or ``≤ 5`` (a read or
    click condition: at most its looked-at step's); the other steps are not in it."""
    if not report:
        return {}
    steps = report["steps"]
    branched: dict[int, bool] = {}
    out: dict[int, str] = {}
    for step in steps:
        index, looks_at = step["step"], step["looks_at"]
        branched[index] = step["when"] is not None or (
            looks_at is not None and branched.get(looks_at, False))
        if branched[index]:
            out[index] = (f"≈ {step['expected']:,}" if step["expected"] is not None
                          else f"≤ {step['up_to']:,}")
    return out


def estimate_note(report: dict[str, Any] | None, planned: int) -> list[str]:
    """What the step table's ``≈`` counts are, within 80 columns (empty: no step has one)."""
    if not report or not step_estimates(report):
        return []
    return textwrap.wrap(
        f"≈, ≤: recipients expected at a {report['expected_rate']:.0%} reply rate "
        f"([replies] expected_rate); the {planned:,} rows of those steps are planned, "
        "each sent only when its condition is met", 78)


__all__ = ["branch_lines", "branches_of", "branches_report", "estimate_note",
           "step_estimates"]
