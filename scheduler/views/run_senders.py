"""The senders of a run as ``campaign status`` shows them: each one's state since when and
why (and who decided it), its score and speed, its warm-up day and today's cap while it
warms up, its sends today (every run) and in this run, and what to do when it is held or
throttled.

Read from the ledger alone (the senders' profiles and history are shared by every process),
so any process can say it; the sentences are pure functions (:func:`sender_lines`), tested
with fixed datetimes. Times are in the campaign's zone with its label.
"""

from __future__ import annotations

import re
import textwrap
from datetime import datetime

from pydantic import BaseModel, field_serializer

from scheduler.core.time_words import iso_utc, local_time
from scheduler.core.units import day_start
from scheduler.dispatch import warmup
from scheduler.ledger.access import Connection
from scheduler.ledger.run_reads import RunSenderReads
from scheduler.ledger.states import HELD_STATES, ChangeSource, SenderStatus
from scheduler.ledger.states import NO_PROFILE as NEW
from scheduler.settings.run import RunOptions
from scheduler.settings.senders import SenderCare

#: Who made a change, as the text says it.
_BY = {ChangeSource.OPERATOR: "by a person", ChangeSource.ENGINE: "by the health rules",
       ChangeSource.EVENT: "by its session's status"}
_NBSP = "\u00a0"
#: States a reconnection ends (the session's own status put the sender there).
_SESSION_HELD = frozenset({SenderStatus.LOGGED_OUT, SenderStatus.DISCONNECTED})


class RunSender(BaseModel):
    """One sender of a run: its profile now and what it did (``status --json``)."""

    sender: str
    #: A state of ``SenderStatus``, or ``new`` (no profile yet: made on its first send).
    state: str
    since: datetime | None = None
    reason: str | None = None
    #: Who made its latest change: ``engine``, ``operator`` or ``event``.
    changed_by: str | None = None
    score: float | None = None
    #: The factor applied to its rate (1.0: full speed).
    throttle: float | None = None
    warm_day: int | None = None
    warm_days: int | None = None
    #: Today's warm-up cap (None: no cap today).
    warm_cap: int | None = None
    #: Rows dispatched through it today (the campaign's zone), every run and worker; None:
    #: not counted (a day of more sends than a status counts in time, or the dashboard).
    sends_today: int | None = 0
    #: This run's rows through it.
    sent: int = 0
    failed: int = 0
    unknown: int = 0
    opt_outs: int = 0
    replies: int = 0
    #: No sends through it until a person (or a reconnection) brings it back.
    held: bool = False
    #: What to do about it, when it is held or throttled.
    what_to_do: str | None = None

    @field_serializer("since")
    def _utc(self, value: datetime | None) -> str | None:
        return iso_utc(value)


def what_to_do(sender: str, state: str) -> str | None:
    """The command that brings a held sender back, or what a throttled one does."""
    if state in _SESSION_HELD:
        return (f"no sends through {sender} until its session connects again: "
                f"`campaign sessions qr {sender}` and scan the QR code with its phone")
    if state in HELD_STATES:
        return (f"no sends through {sender} until a person resumes it: "
                f"`campaign senders resume {sender} --reason TEXT`")
    if state == SenderStatus.THROTTLED:
        return "it speeds up again step by step while its signals stay good"
    return None


def read_senders_of_run(conn: Connection, run_id: int, options: RunOptions, care: SenderCare,
                        now: datetime, *, with_counts: bool = True,
                        today: bool = True) -> list[RunSender]:
    """The run's senders (its options' and any its rows went through), read on ``conn`` (a
    caller's snapshot). ``with_counts``:
    also this run's rows per sender (the trigger-kept ``run_sender_tallies`` and the run's
    opt-out replies, a few rows each, see :meth:`RunSenderReads.counts`; ``campaign
    status --json`` shows them, with every sender the run's rows went through; the
    dashboard leaves them out: only the run's own senders); ``today``: also the rows
    dispatched through each today (every run; as many index entries as the day's sends;
    else None)."""
    reads = RunSenderReads(conn)
    counts = reads.counts(run_id) if with_counts else {}
    names = list(dict.fromkeys([*options.senders, *sorted(counts)]))
    stored = reads.profiles(names)
    # dispatched today, as the sender index counts them alone (a retry waiting counts: it
    # was tried today); the state as well would cost a read of each row
    today_sends = (reads.dispatched_since(names, day_start(now, options.timezone))
                   if today else {})
    latest = reads.latest_changes(list(stored))  # one statement, every sender
    out = []
    for name in names:
        done = counts.get(name)  # none: 0 of each
        facts = RunSender(sender=name, state=NEW,
                          sends_today=today_sends.get(name, 0) if today else None,
                          **(done._asdict() if done is not None else {}))
        row = stored.get(name)
        if row is not None:
            facts.state, facts.since, facts.reason = row.state, row.since, row.reason
            facts.score, facts.throttle = row.score, row.throttle
            change = latest.get(name)
            facts.changed_by = change.source if change is not None else None
            facts.held = row.state in HELD_STATES
            facts.what_to_do = what_to_do(name, row.state)
            ramp = care.ramp_of(name)
            if row.state == SenderStatus.WARMING:
                facts.warm_day = row.warm_day
                if ramp is not None:
                    facts.warm_days = ramp.days
                    facts.warm_cap = warmup.cap_for_day(ramp, row.warm_day, options.daily_cap)
        out.append(facts)
    return out


def _pack(parts: list[str], width: int, indent: str) -> list[str]:
    """``parts`` joined by `` · `` into lines of at most ``width``; a part longer than a
    line is wrapped on its own, continuation lines indented by ``indent``."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += f" · {part}"
        else:
            lines += textwrap.wrap(part, width, initial_indent="" if not lines else indent,
                                   subsequent_indent=indent, break_on_hyphens=False)
    return [line.replace(_NBSP, " ") for line in lines]


def _wrap(text: str, width: int) -> list[str]:
    """``text`` indented under its sender, a command in backquotes never split."""
    kept = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", _NBSP), text)
    return [line.replace(_NBSP, " ") for line in textwrap.wrap(
        kept, width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False,
        break_long_words=False)]


def _headline(s: RunSender, zone: str) -> list[str]:
    if s.state == NEW:
        return [f"{s.sender} has no profile yet (made when a run sends through it)"]
    state = s.state
    if s.throttle is not None and s.throttle < 1.0 and not s.held:
        state += f" at {s.throttle:.0%} of its rate"
    by = f" {_BY[ChangeSource(s.changed_by)]}" if s.changed_by in _BY else ""
    at = local_time(s.since, zone).replace(" ", _NBSP)  # a time never split from its zone
    parts = [f"{s.sender} {state}{by} since {at}"]
    if s.warm_day is not None:
        days = f" of {s.warm_days}" if s.warm_days else ""
        cap = "" if s.warm_days is None else (
            ", no cap today" if s.warm_cap is None else f", {s.warm_cap:,} today")
        parts.append(f"warm-up day {s.warm_day}{days}{cap}")
    if s.score is not None:
        parts.append(f"score {s.score:.0f}")
    if s.sends_today is not None:
        parts.append(f"{s.sends_today:,} sent today")
    return parts


def sender_lines(senders: list[RunSender], zone: str, *, width: int = 78,
                 waiting: bool = False) -> list[str]:
    """The senders' lines for ``status`` (at most ``width`` columns): a line or two per
    sender, then why and what to do for one held or throttled. ``waiting``: the run has
    rows left to send, so every sender held means the run waits (said first)."""
    if not senders:
        return []
    lines = ["senders of this run:"]
    if waiting and all(s.held for s in senders):
        lines += textwrap.wrap(
            "every sender is held: the run waits and sends nothing until one is back "
            "(see each below)", width)
    for s in senders:
        lines += _pack(_headline(s, zone), width, "    ")
        if s.reason and s.state not in (NEW, SenderStatus.HEALTHY, SenderStatus.WARMING):
            lines += _wrap(f"why: {s.reason}", width)
        if s.what_to_do:
            lines += _wrap(s.what_to_do, width)
    return lines


__all__ = ["RunSender", "read_senders_of_run", "sender_lines", "what_to_do"]
