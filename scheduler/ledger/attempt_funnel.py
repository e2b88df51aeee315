"""The one definition of a run's funnel per attempt and channel (issue 25: retry rules
and a fallback channel), shared by ``campaign status``, the dashboard and the report.

:func:`read_attempts` builds :class:`AttemptsView` on the caller's snapshot from bounded
reads (:mod:`scheduler.ledger.queries.attempts`): first attempts are the run's tallies
minus its attempt rows, the fallback run is its own tallies. A line per step and attempt
number: its rows, sent, reached (the channel's: answered calls, delivered SMS, delivered
or read WhatsApp messages), the rule that made it and the outcomes tried again; then the
fallback channel's line; what is still due and what awaits a verdict.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import Field

from scheduler.core.channel_terms import terms_of, title_of
from scheduler.core.lazy_model import LazyModel
from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.queries import attempts as aq
from scheduler.ledger.queries import tallies
from scheduler.ledger.run_reads import RunReads
from scheduler.ledger.run_rows import Tally
from scheduler.ledger.states import DeliveryState as S
from scheduler.settings.retry_rules import SHORT_CALL, RecycleOptions
from scheduler.settings.run import RunOptions, from_snapshot

#: A view counts at most this many rows awaiting a verdict (``campaign status``: all).
AWAITING_COUNTED = 10_000
#: A rule's outcome in words.
OUTCOME_WORDS = {"no_answer": "no answer", "not_answered": "not answered",
                 "busy": "busy", "failed": "failed", "undelivered": "undelivered",
                 "fallback": "fallback",
                 SHORT_CALL: "answered under min_talk"}


class AttemptLine(LazyModel):
    """One attempt of a step (issue 25: retry rules), or the fallback channel's step."""

    step: int = 0
    #: 1 for the first attempts, 2, 3 … for retries; 0 on the fallback's line (its rows
    #: carry the attempt number their recipient was at: ``fallback`` set instead).
    attempt: int = 1
    channel: str
    fallback: bool = False
    #: What made these attempts: the rule ("no_answer", "busy" …) → rows (attempt 2 on).
    made_by: dict[str, int] = Field(default_factory=dict)
    #: Rows of this attempt (planned or later; skipped rows left out), sent, reached.
    rows: int = 0
    sent: int = 0
    reached: int = 0
    #: What "reached" means on this channel: answered, delivered or read.
    reached_as: str = "delivered"
    #: Sent and not reached (yet): tried again, fell back, final or awaiting a verdict.
    not_reached: int = 0
    #: Rows of this attempt tried again, by the outcome (the next attempt's rule).
    retried: dict[str, int] = Field(default_factory=dict)
    #: Rows still to send, and the earliest of their due times (attempts 2 on and the
    #: fallback; the 1st attempts' due time is the run's own, not read here).
    due: int = 0
    next_due_at: datetime | None = None
    #: Sent rows awaiting a verdict on their outcome (None: not counted for this line).
    awaiting: int | None = None


class AttemptsView(LazyModel):
    """A run's funnel per attempt and channel: first attempts, each retry, the fallback."""

    #: The run whose recipients these are (a fallback run shows its parent's funnel).
    run: int
    channel: str
    fallback_run: int | None = None
    lines: list[AttemptLine] = Field(default_factory=list)
    #: Attempts (retries and fallback sends, not 1st attempts) still to send, and the
    #: earliest due time.
    due: int = 0
    next_due_at: datetime | None = None
    #: Sent rows awaiting a verdict on their outcome (retry, fall back, or final), counted
    #: up to ``awaiting_counted`` (0: all of them were counted).
    awaiting: int = 0
    awaiting_counted: int = 0


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th`` … ``11th``, ``12th``, ``13th``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def reached_key(channel: str, recycle: RecycleOptions | None) -> str:
    """The funnel's count that says a recipient was reached on ``channel`` (a WhatsApp
    campaign whose fallback goes when ``not_read``: read)."""
    fallback = recycle.fallback if recycle is not None else None
    if fallback is not None and fallback.when == "not_read":  # WhatsApp's only
        return "read"
    return terms_of(channel).reached


def _funnel(rows: Iterable[tuple[int, str, int, str, int]]) -> dict[str, int]:
    return Tally(tuple(rows)).funnel()


def _minus(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) - b.get(k, 0) for k in a}


def _sum(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for c in counts:
        for k, n in c.items():
            out[k] += n
    return dict(out)


def _earliest(moments: Iterable[datetime | None]) -> datetime | None:
    found = [m for m in moments if m is not None]
    return min(found) if found else None


def recycle_of(run: Run) -> RecycleOptions | None:
    """The run's second chances as planned (``RunOptions.recycle``; None: none)."""
    options = (RunOptions.from_json(run.options, run_id=run.id) if run.options
               else from_snapshot(json.loads(run.definition or "{}")))
    return options.recycle


def read_attempts(conn: Connection, run: Run, options: RunOptions | None = None, *,
                  every_row: bool = False) -> AttemptsView | None:
    """Run ``run``'s funnel per attempt (its parent's, for a fallback run), read on
    ``conn`` (``options``: the run's, parsed already); None for a run without retry rules,
    fallback or attempt rows (no read of its rows then). ``every_row``: count every row
    awaiting a verdict."""
    assert run.id is not None
    fam = aq.family(conn, run.id)
    channel = run.channel
    if fam.parent != run.id:  # a fallback run: its parent's recipients
        parent = RunReads(conn).run(fam.parent)
        recycle = recycle_of(parent) if parent is not None else None
        channel = parent.channel if parent is not None else channel
    else:
        recycle = options.recycle if options is not None else recycle_of(run)
        if recycle is None and fam.fallback is None:
            return None  # most runs: nothing more read
    groups = aq.attempt_rows(conn, fam.parent)
    if recycle is None and not groups and fam.fallback is None:
        return None
    reached_as = reached_key(channel, recycle)
    tally = tallies.read(conn, fam.parent)
    steps = sorted({g.step for g in groups}
                   | {s for s in tally.steps() if recycle is None or recycle.watches(s)})
    lines: list[AttemptLine] = []
    for step in steps:
        lines += _step_lines(step, channel, reached_as, tally, groups)
    if fam.fallback is not None:
        lines.append(_fallback_line(conn, fam.fallback))
    view = AttemptsView(run=fam.parent, channel=channel, fallback_run=fam.fallback,
                        lines=lines)
    cap = 10**12 if every_row else AWAITING_COUNTED
    view.awaiting = aq.awaiting_verdict(conn, fam.parent, cap)
    view.awaiting_counted = 0 if view.awaiting < cap else cap
    first = [x for x in view.lines if x.attempt == 1 and not x.fallback]
    if len(first) == 1 and not view.awaiting_counted:  # the rest of the watched rows
        first[0].awaiting = view.awaiting - sum(x.awaiting or 0 for x in view.lines
                                                if x is not first[0])
    later = [x for x in view.lines if x.attempt != 1 or x.fallback]  # retries, fallback
    view.due = sum(x.due for x in later)
    view.next_due_at = _earliest(x.next_due_at for x in later)
    return view


def _step_lines(step: int, channel: str, reached_as: str, tally: Tally,
                groups: list[aq.AttemptRows]) -> list[AttemptLine]:
    """Step ``step``'s lines: its first attempts (tallies minus attempt rows), then each
    attempt number its attempt rows have."""
    mine = [g for g in groups if g.step == step]
    by_attempt: dict[int, list[aq.AttemptRows]] = defaultdict(list)
    for g in mine:
        by_attempt[g.attempt].append(g)
    funnels = {n: _funnel((g.step, g.state, g.marks, "", g.n) for g in gs)
               for n, gs in by_attempt.items()}
    whole = _funnel(r for r in tally.rows if r[0] == step)
    first = _minus(whole, _sum(funnels.values()))

    def made_by(n: int) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for g in by_attempt.get(n, []):
            if g.state != S.SKIPPED:
                out[g.rule or "?"] += g.n
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def line(n: int, counts: Mapping[str, int]) -> AttemptLine:
        sent, reached = counts.get("sent", 0), counts.get(reached_as, 0)
        # answered, but under min_talk: the rules counted it as not reached (and called
        # again; its next attempt says so)
        reached -= sum(g.n for g in by_attempt.get(n + 1, []) if g.rule == SHORT_CALL)
        gs = by_attempt.get(n, [])
        return AttemptLine(
            step=step, attempt=n, channel=channel, made_by=made_by(n) if n > 1 else {},
            rows=counts.get("planned", 0), sent=sent, reached=reached,
            reached_as=reached_as, not_reached=max(sent - reached, 0),
            retried=made_by(n + 1),
            due=sum(g.n for g in gs if g.state == S.PLANNED),
            next_due_at=_earliest(g.next_due for g in gs),
            awaiting=sum(g.awaiting for g in gs) if n > 1 else None)

    head = line(1, first)
    # the 1st attempts not sent yet: the step's planned rows but the attempt rows' (their
    # earliest due time is the run's own, shown with its progress)
    head.due = (sum(r[4] for r in tally.rows if r[0] == step and r[1] == S.PLANNED)
                - sum(g.n for g in mine if g.state == S.PLANNED))
    return [head, *(line(n, funnels[n]) for n in sorted(funnels) if n > 1)]


def _fallback_line(conn: Connection, child_id: int) -> AttemptLine:
    """The fallback run's line: its own tallies (every row of it is a fallback send)."""
    reads = RunReads(conn)
    child = reads.run(child_id)
    channel = child.channel if child is not None else "sms"
    tally = tallies.read(conn, child_id)
    counts = tally.funnel()
    planned = tally.states().get(S.PLANNED, 0)
    reached_as = terms_of(channel).reached
    sent, reached = counts.get("sent", 0), counts.get(reached_as, 0)
    return AttemptLine(step=0, attempt=0, channel=channel, fallback=True,
                       made_by={"fallback": counts.get("planned", 0)},
                       rows=counts.get("planned", 0), sent=sent, reached=reached,
                       reached_as=reached_as, not_reached=max(sent - reached, 0),
                       due=planned, next_due_at=reads.next_due(child_id) if planned else None)


# ---------------------------------------------------------------------- words


def label(line: AttemptLine) -> str:
    """``1st``, ``2nd`` … or ``SMS fallback``."""
    if line.fallback:
        return f"{title_of(line.channel)} fallback"
    return ordinal(line.attempt)


def rules_text(counts: Mapping[str, int]) -> str:
    """``no answer 250, busy 51``."""
    return ", ".join(f"{OUTCOME_WORDS.get(rule, rule)} {n:,}" for rule, n in counts.items())


__all__ = [
    "AWAITING_COUNTED",
    "AttemptLine",
    "AttemptsView",
    "label",
    "ordinal",
    "reached_key",
    "read_attempts",
    "rules_text",
]
