"""One check's verdicts summed up for the run's timeline: a line per wave of attempts (pure).

A wave is the retries of one attempt number due at the same shown time (the formatter the
dispatcher passes shows minutes in the campaign's zone, so a check's retries of one rule
fall into one wave unless recipients' windows in other zones moved some of them), e.g.
``12 not answered, 3 busy: called again from 14:00 -03:00 (attempt 2)``; fallbacks make
one line per channel: ``40 not delivered: SMS fallback (attempt 2)``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from scheduler.dispatch.recycle.verdicts import Fallback, Retry, Verdict
from scheduler.settings.retry_rules import SHORT_CALL

#: A rule's outcome in words, and what its attempt does.
RULE_WORDS = {"no_answer": "not answered", "busy": "busy", "failed": "failed",
              "undelivered": "undelivered", "not_answered": "not answered",
              SHORT_CALL: "answered too briefly"}
RULE_VERBS = {"undelivered": "sent again"}
#: Lines shown before the rest of the retries are summed up in one.
MAX_LINES = 6


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{n:,} {RULE_WORDS.get(rule, rule)}" for rule, n in counter.items())


def waves(decisions: Iterable[tuple[Any, Verdict] | Verdict],
          when: Callable[[datetime], str], *, max_lines: int = MAX_LINES) -> list[str]:
    """The retry waves and fallbacks of one check (``(row, verdict)`` pairs or verdicts),
    earliest first; ``when`` shows a due time to people."""
    retries: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    first_due: dict[tuple[int, str], datetime] = {}
    fallbacks: dict[tuple[str, int], int] = Counter()
    for item in decisions:
        verdict = item[1] if isinstance(item, tuple) else item
        if isinstance(verdict, Retry):
            key = (verdict.attempt, when(verdict.due_at))
            retries[key][verdict.rule] += 1
            first_due[key] = min(first_due.get(key, verdict.due_at), verdict.due_at)
        elif isinstance(verdict, Fallback):
            fallbacks[(verdict.channel, verdict.attempt)] += 1
    ordered = sorted(retries, key=lambda key: (first_due[key], key[0]))
    lines = []
    for attempt, shown in ordered[:max_lines]:
        counter = retries[(attempt, shown)]
        verbs = {RULE_VERBS.get(rule, "called again") for rule in counter}
        verb = verbs.pop() if len(verbs) == 1 else "tried again"
        lines.append(f"{_counts(counter)}: {verb} from {shown} (attempt {attempt})")
    rest = ordered[max_lines:]
    if rest:
        more = sum(sum(retries[key].values()) for key in rest)
        lines.append(f"{more:,} more attempts from {rest[0][1]} to {rest[-1][1]}")
    if fallbacks:
        from scheduler.dispatch.channels import channel_words  # loaded when a line says it
    for (channel, attempt), n in sorted(fallbacks.items()):
        lines.append(f"{n:,} not reached: {channel_words(channel)} fallback "
                     f"(attempt {attempt})")
    return lines
