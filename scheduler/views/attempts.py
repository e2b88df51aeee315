"""A run's second chances in words: the funnel per attempt and channel as ``campaign
status`` says it (:func:`attempt_lines`); the numbers are
:mod:`scheduler.ledger.attempt_funnel`'s (the dashboard shows them as a table, the report
as its Attempts sheet)."""

from __future__ import annotations

import textwrap
from typing import Any

from scheduler.core.channel_terms import terms_of
from scheduler.core.time_words import local_time
from scheduler.ledger.attempt_funnel import AttemptsView, label, read_attempts, rules_text
from scheduler.ledger.models import Run
from scheduler.ledger.states import RunStatus
from scheduler.views.run_models import Wait


def _packed(parts: list[str], width: int, indent: str = "  ") -> list[str]:
    """``parts`` joined by `` · `` into lines of at most ``width``, a part never cut
    across lines (unless it is wider than a line), continuations indented."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += f" · {part}"
        elif len(indent if lines else "") + len(part) <= width:
            lines.append((indent if lines else "") + part)
        else:
            lines += textwrap.wrap(part, width, initial_indent=indent if lines else "",
                                   subsequent_indent=indent, break_on_hyphens=False)
    return lines


def attempt_lines(view: AttemptsView | None, zone: str, width: int = 80, *,
                  run_id: int | None = None) -> list[str]:
    """``status``'s lines for the view of run ``run_id`` (times in ``zone``), cut at
    spaces to ``width``:
    the funnel per attempt, what the retries were made on, what is still due and what
    awaits a verdict."""
    if view is None:
        return []
    steps = sorted({x.step for x in view.lines if not x.fallback})
    parts: list[str] = []
    why: list[str] = []
    for x in view.lines:
        if x.fallback:
            name = f"{label(x)} {x.sent:,}, {x.reached:,} {x.reached_as}"
        else:
            prefix = f"step {x.step + 1} " if len(steps) > 1 else ""
            noun = f" {terms_of(x.channel).noun}" if x.attempt == 1 else ""
            of = f" of {x.rows:,}" if x.attempt > 1 and x.rows > x.sent else ""
            name = (f"{prefix}{label(x)} {x.sent:,}{of}{noun}, {x.reached:,} "
                    f"{x.reached_as}")
            if x.made_by:
                why.append(f"{prefix}{label(x)} on {rules_text(x.made_by)}")
        parts.append(name)
    if view.due:
        when = local_time(view.next_due_at, zone) if view.next_due_at else "later"
        parts.append(f"{view.due:,} due from {when}")
    if view.awaiting:
        over = "over " if view.awaiting_counted else ""
        parts.append(f"{over}{view.awaiting:,} awaiting an outcome")
    # a fallback run shows its parent's funnel, and says so
    head = "Attempts: " if run_id in (None, view.run) else f"Attempts of run {view.run}: "
    parts[0] = head + parts[0]
    out = _packed(parts, width)
    if why:
        why[0] = "  tried again: " + why[0]
        out += _packed(why, width, indent="    ")
    return out


def attempt_table(view: AttemptsView | None) -> list[dict[str, Any]]:
    """The dashboard's rows of the view: per line its label (``2nd``, ``SMS fallback``;
    ``step 2, 1st`` when several steps have attempts), the rule that made it in words,
    its rows, sent, reached (and what reached means), due."""
    if view is None:
        return []
    steps = {x.step for x in view.lines if not x.fallback}
    return [{"step": x.step, "attempt": "fallback" if x.fallback else x.attempt,
             "label": (f"step {x.step + 1}, " if len(steps) > 1 and not x.fallback else "")
             + label(x),
             "made_by": rules_text(x.made_by) if x.attempt > 1 else "",
             "rows": x.rows, "sent": x.sent, "reached": x.reached,
             "reached_as": x.reached_as, "due": x.due} for x in view.lines]


def second_chance_waits(run: Run, view: AttemptsView | None, planned: int) -> list[Wait]:
    """Why a running run with nothing left to send is not over: sends awaiting their
    outcome (or the fallback's ``after``) before their second chance is decided; a
    fallback run waiting for its parent's rows."""
    if run.status != RunStatus.RUNNING or planned or view is None:
        return []
    if run.parent_run_id is not None:
        return [Wait(kind="second_chances",
                     text=f"a fallback run: it gets the recipients run {run.parent_run_id} "
                          "did not reach, while that run goes on")]
    if view.awaiting:
        over = "over " if view.awaiting_counted else ""
        return [Wait(kind="second_chances",
                     text=f"{over}{view.awaiting:,} sends await their outcome (or the "
                          "fallback's time): a retry or the fallback is decided then")]
    return []


__all__ = ["attempt_lines", "attempt_table", "read_attempts", "second_chance_waits"]
