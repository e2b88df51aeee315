"""Whether a step that waits for its condition goes to one recipient: decided once (pure).

:func:`decide` reads what the ledger holds of the step the condition looks at
(:class:`Seen`: its state, when it was sent, read and clicked, the replies tied to it) at
``now`` and answers :class:`Go`, :class:`Skip` or :class:`Wait`:

1. the looked-at step not sent yet (planned, in flight, itself waiting): wait for it;
2. it was never sent (skipped, failed, expired, in doubt) or the number opted out: skip;
3. its deadline is its send time plus the condition's ``wait_s``; only what happened by
   then counts, whenever the decision is taken (a decision taken late, after a crash, is
   the one that would have been taken on time); "nothing happened by then" is decided
   once the events sent by then have had their chance to arrive (``heard``);
4. reply conditions look at the *first* reply (by the time the recipient sent it, so
   replies stored out of order decide the same; opt-out words do not count): ``replied``
   goes on it, ``reply_matches`` goes when it matches the expression (accents removed, any
   case) on its text or any of its choices (a button's or list row's id, a poll option) or
   is exactly one of the keywords, ``not_replied`` is skipped by it; without a reply, each
   is decided at the deadline;
5. ``read``/``not_read`` and ``clicked``/``not_clicked`` likewise on the first read or
   click.

A decision is stored and never taken again: a reply that comes after it is only noted
(:func:`late_note`). No clock is read and nothing is stored here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler.campaign.conversation_spec import compile_pattern
from scheduler.core.folding import fold, plain
from scheduler.core.time_words import written_duration
from scheduler.ledger.conversation_rows import Seen, SeenReply
from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S
from scheduler.settings.conversation import StepCondition

#: Looked-at states that are not settled yet: the decision waits.
NOT_YET = frozenset({S.PLANNED, S.DISPATCHING, S.HELD})


@dataclass(frozen=True, slots=True)
class Go:
    """The step goes: ``why`` in words; ``reply`` the reply that made it go, if one did."""

    why: str
    reply: int | None = None


@dataclass(frozen=True, slots=True)
class Skip:
    """The step is not sent to this recipient: ``why`` in words."""

    why: str
    reply: int | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    """Not decided yet: decided by ``until`` at the latest (None: when the looked-at step
    settles)."""

    until: datetime | None


Decision = Go | Skip | Wait



def quoted(text: str | None, limit: int = 40) -> str:
    """A reply's text for a reason: quoted, one line, cut at ``limit`` characters."""
    one = " ".join((text or "").split())
    return repr(one if len(one) <= limit else one[: limit - 1] + "…")


def matches(cond: StepCondition, reply: SeenReply) -> bool:
    """Whether ``reply`` makes a ``reply_matches`` step go: its expression on the text or a
    choice (accents removed, any case), or the whole reply one of the keywords."""
    values = [v for v in (reply.text, *reply.choices) if v]
    if cond.keywords and any(fold(v) in cond.keywords for v in values):
        return True
    if cond.pattern is None:
        return False
    pattern = compile_pattern(cond.pattern)
    return any(pattern.search(plain(v)) for v in values)


def first_reply(seen: Seen, deadline: datetime) -> SeenReply | None:
    """The first reply sent by ``deadline`` (opt-outs left out), by its time then id."""
    counted = [r for r in seen.replies if not r.opt_out and r.at <= deadline]
    return min(counted, key=lambda r: (r.at, r.id)) if counted else None


def decide(cond: StepCondition, seen: Seen, now: datetime,
           heard: Callable[[datetime], datetime] | None = None) -> Decision:
    """The decision on ``cond``'s step for one recipient at ``now`` (see the module).

    ``heard(deadline)``: when every event sent by ``deadline`` has had its chance to reach
    the ledger (the receiver's lag; after a restart, the service's retries of what came
    while nobody listened); a decision that nothing happened by the deadline waits until
    then (None: at the deadline itself)."""
    if seen.state in NOT_YET:
        return Wait(None)
    looked = f"step {cond.looks_at}"
    if seen.state not in SENT_STATES or seen.sent_at is None:
        return Skip(f"{looked} was not sent ({seen.state})")
    if seen.suppressed:
        return Skip("the number opted out")
    deadline = seen.sent_at + timedelta(seconds=cond.wait_s)
    within = written_duration(cond.wait_s)
    if cond.kind in ("replied", "reply_matches", "not_replied"):
        reply = first_reply(seen, deadline)
        if reply is not None:
            said = f"replied {quoted(reply.text)}"
            if cond.kind == "replied":
                return Go(said, reply.id)
            if cond.kind == "not_replied":
                return Skip(f"{said} within {within}", reply.id)
            if matches(cond, reply):
                return Go(f"{said}: {cond.text}", reply.id)
            return Skip(f"{said}: not {cond.text}", reply.id)
        if now < (ready := heard(deadline) if heard else deadline):
            return Wait(ready)
        why = f"no reply within {within}" + _after(seen, deadline)
        return Go(why) if cond.kind == "not_replied" else Skip(why)
    moment = seen.read_at if cond.kind.endswith("read") else seen.clicked_at
    what = "read" if cond.kind.endswith("read") else "clicked"
    happened = moment is not None and moment <= deadline
    positive = not cond.kind.startswith("not_")
    if happened:
        said = f"{what} within {within}"
        return Go(said) if positive else Skip(said)
    if now < (ready := heard(deadline) if heard else deadline):
        return Wait(ready)
    said = f"not {what} within {within}"
    return Skip(said) if positive else Go(said)


def _after(seen: Seen, deadline: datetime) -> str:
    """A reply sent after the wait but stored before the decision, said on it."""
    late = [r for r in seen.replies if not r.opt_out and r.at > deadline]
    if not late:
        return ""
    first = min(late, key=lambda r: (r.at, r.id))
    return f" (the reply {quoted(first.text)} came after the wait: not counted)"


def late_note(reply: SeenReply, decided_at: datetime, outcome: str) -> str:
    """What a reply that came after a decision says on the decision's record."""
    gone = "sent" if outcome == "go" else "not sent"
    return (f"a reply {quoted(reply.text)} came after the decision (at "
            f"{reply.at.isoformat(timespec='seconds')}, decided "
            f"{decided_at.isoformat(timespec='seconds')}): not undone, the step stays "
            f"{gone}")


__all__ = ["Decision", "Go", "Seen", "SeenReply", "Skip", "Wait", "decide", "first_reply",
           "late_note", "matches", "quoted"]
