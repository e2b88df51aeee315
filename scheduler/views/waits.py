"""Why a run does not send now, and whether it looks stuck: pure functions of what the
ledger says (:class:`RunFacts`) and the time, tested with fixed datetimes.

A run *waits* when something explains that it sends nothing: it is paused or not started,
its sending window is closed, its senders are at their cap or held (paused, disconnected,
logged out, retired), its sends in doubt are being verified, its next rows are due later,
or no process sends it. It is *stuck* when it should be sending (running, rows left, no
wait explains it) and its last send is older than its pace allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler.core.time_words import local_time, span
from scheduler.dispatch import caps
from scheduler.dispatch.results import CapWait
from scheduler.dispatch.windows import SendWindow
from scheduler.ledger.states import RunStatus
from scheduler.views.run_models import SenderGlance, Stuck, Wait

#: A run is never called stuck before this long without a send...
STUCK_AFTER_AT_LEAST = timedelta(minutes=2)
#: ...nor before this many of its pace's intervals passed without one.
STUCK_INTERVALS = 10


@dataclass
class RunFacts:
    """What the waits and the stuck flag are decided from (read in one snapshot)."""

    run_id: int
    status: str
    timezone: str
    #: Rows still to send (planned), and rows being sent or verified (dispatching).
    planned: int
    dispatching: int = 0
    control: str | None = None
    started_at: datetime | None = None
    #: The campaign's sending window (None: always open; also None when each recipient's
    #: own zone decides, which no single window says).
    window: SendWindow | None = None
    #: Senders at their daily cap or plan limit.
    capped: Sequence[CapWait] = ()
    senders: Sequence[SenderGlance] = ()
    #: When the first verification of a send in doubt ends.
    verifying_until: datetime | None = None
    #: ``unknown`` rows that the service may still prove sent, and until when.
    unknown_waiting: int = 0
    unknown_settles_at: datetime | None = None
    #: The earliest due time of the next planned rows (None: none due at all).
    next_due: datetime | None = None
    #: Nobody sends the run: why, and what to do (``Unserved.reason`` / ``advice``).
    unserved: tuple[str, str] | None = None
    #: Sends per second expected from the plan (rate × senders that may send).
    planned_rate: float = 0.0
    last_send_at: datetime | None = None
    #: The plan's latest send time, when it has one.
    latest: datetime | None = None
    extra: list[Wait] = field(default_factory=list)


def _at(moment: datetime | None, facts: RunFacts, now: datetime) -> str:
    if moment is None:
        return ""
    return f"{local_time(moment, facts.timezone)} (in {span(max(moment - now, timedelta()))})"


def _sender_waits(facts: RunFacts) -> list[Wait]:
    out = []
    for s in facts.senders:
        if s.held:
            out.append(Wait(kind="sender_held", sender=s.sender, advice=s.what_to_do,
                            text=f"sender {s.sender} is {s.state}: nothing goes through it"))
        elif s.throttle is not None and s.throttle < 1.0 and s.state == "throttled":
            out.append(Wait(kind="sender_slow", sender=s.sender, advice=s.what_to_do,
                            text=f"sender {s.sender} is throttled to {s.throttle:.0%} of "
                                 "its rate"))
    if out and facts.senders and all(s.held for s in facts.senders):
        out.insert(0, Wait(kind="sender_held", text="every sender of the run is held: it "
                                                    "sends nothing until one is back"))
    return out


def run_waits(facts: RunFacts, now: datetime) -> list[Wait]:
    """Why the run does not send (or sends less) at ``now``; empty when nothing holds it."""
    if facts.status == RunStatus.PAUSED:
        return [Wait(kind="paused", text="paused: nothing is sent until it is resumed",
                     advice=f"`campaign resume {facts.run_id}`")]
    if facts.status not in (RunStatus.PLANNED, RunStatus.RUNNING):
        return []
    waits: list[Wait] = []
    if facts.control in ("pause", "cancel"):
        waits.append(Wait(kind=facts.control, text=f"a {facts.control} was asked; the "
                                                   "process sending it obeys within 2 s"))
    if facts.unserved is not None:
        reason, advice = facts.unserved
        waits.append(Wait(kind="unserved", text=reason, advice=advice))
    if facts.status == RunStatus.PLANNED and facts.started_at is None and not facts.unserved:
        waits.append(Wait(kind="not_started", text="stored, not started yet"))
    if facts.planned:
        if facts.window is not None and not facts.window.is_open(now):
            opens = facts.window.next_open(now)
            waits.append(Wait(kind="window", until=opens,
                              text=f"the sending window is closed: it opens "
                                   f"{_at(opens, facts, now)}"))
        if facts.next_due is not None and facts.next_due > now:
            waits.append(Wait(kind="scheduled", until=facts.next_due,
                              text=f"its next rows are due {_at(facts.next_due, facts, now)}"))
        for wait in sorted((w for w in facts.capped if w.sends_again > now),
                           key=lambda w: (w.sends_again, w.sender)):
            waits.append(Wait(kind="cap", sender=wait.sender, until=wait.sends_again,
                              text=caps.cap_sentence(wait, facts.timezone, now=now,
                                                     latest=facts.latest)))
        waits += _sender_waits(facts)
    if facts.dispatching and facts.verifying_until is not None:
        waits.append(Wait(kind="in_doubt", until=facts.verifying_until,
                          text=f"{facts.dispatching:,} sends in doubt are being verified, "
                               f"the first until {_at(facts.verifying_until, facts, now)}"))
    if facts.unknown_waiting:
        waits.append(Wait(kind="in_doubt", until=facts.unknown_settles_at,
                          text=f"{facts.unknown_waiting:,} unknown sends may still be "
                               "proven by the service"
                               + (f", until {_at(facts.unknown_settles_at, facts, now)}"
                                  if facts.unknown_settles_at else "")))
    return waits + facts.extra


#: Waits that explain a run sending nothing at all.
_BLOCKING = frozenset({"paused", "pause", "cancel", "unserved", "not_started", "window",
                       "scheduled", "second_chances"})


def _blocked(facts: RunFacts, waits: Sequence[Wait]) -> Wait | None:
    """The wait that explains no send at all, if one does."""
    for wait in waits:
        if wait.kind in _BLOCKING:
            return wait
    capped = {w.sender for w in waits if w.kind == "cap" and w.sender}
    held = {w.sender for w in waits if w.kind == "sender_held" and w.sender}
    names = {s.sender for s in facts.senders} or capped | held
    if names and names <= capped | held:
        return next(w for w in waits if w.kind in ("cap", "sender_held"))
    if facts.planned and facts.dispatching >= facts.planned:
        return next((w for w in waits if w.kind == "in_doubt"), None)
    return None


def allowed_idle(planned_rate: float) -> timedelta:
    """How long a run at ``planned_rate`` sends per second may go without a send."""
    if planned_rate <= 0:
        return STUCK_AFTER_AT_LEAST
    return max(STUCK_AFTER_AT_LEAST, timedelta(seconds=STUCK_INTERVALS / planned_rate))


def judge_stuck(facts: RunFacts, waits: Sequence[Wait], now: datetime) -> Stuck:
    """Whether the run looks stuck at ``now``: running with rows left, no wait explaining
    it, and no send for longer than its pace allows (:func:`allowed_idle`)."""
    if facts.status != RunStatus.RUNNING or not facts.planned:
        return Stuck(reason="it is not sending rows now")
    allowed = allowed_idle(facts.planned_rate)
    since = facts.last_send_at or facts.started_at
    idle = (now - since) if since is not None else None
    blocked = _blocked(facts, waits)
    if blocked is not None:
        return Stuck(reason=f"it waits: {blocked.text}",
                     idle_s=idle.total_seconds() if idle is not None else None,
                     allowed_s=allowed.total_seconds())
    if idle is None or idle <= allowed:
        return Stuck(reason="it sends at its pace",
                     idle_s=idle.total_seconds() if idle is not None else None,
                     allowed_s=allowed.total_seconds())
    last = "no send since it started" if facts.last_send_at is None else "no send"
    return Stuck(stuck=True, idle_s=idle.total_seconds(), allowed_s=allowed.total_seconds(),
                 reason=f"{last} for {span(idle)}, longer than its pace explains "
                        f"({span(allowed)}), and nothing it waits for explains it")
