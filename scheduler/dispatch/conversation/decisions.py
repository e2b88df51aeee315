"""The dispatcher's side of steps that follow replies: decide the waiting rows, once.

At the start of a dispatch the run's conditional steps are gated (their planned rows wait
for a decision, whatever their previous step does). Then, every few seconds while the
run goes and whenever it would idle, :meth:`Decisions.check` reads the waiting rows with
what the ledger holds of the step each looks at, asks
:func:`scheduler.dispatch.conversation.rules.decide`, and stores every decision but the
waits in one transaction with the rows they queue (:class:`ConversationStore.decide`): a
step that goes is due after its ``delay`` on the looked-at step's sender, and is claimed,
paced and capped like any step; one that does not go is skipped, with the steps of its
branch. A reply that comes after a decision is noted on it by the receiver when it is
stored (:func:`scheduler.tracking.apply.late_reply`), never undoing it.

The run does not end while a row waits: such rows are ``planned``, so the run's work is
not done until each is decided (the latest, at its condition's deadline).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from scheduler.dispatch.conversation.rules import Go, Skip, Wait, decide
from scheduler.dispatch.conversation.store import ConversationStore
from scheduler.ledger.conversation_rows import DecisionWrite
from scheduler.settings.conversation import ConversationOptions

#: How often (seconds of the run's clock) the waiting rows are looked at while the run
#: sends (a reply decides its steps within about this long).
LOOK_EVERY_S = 2.0
#: Seconds after a deadline before "nothing came" is decided: the receiver's lag.
EVENT_GRACE_S = 2.0
#: The timeline gets the decisions taken at most this often (seconds of the run's clock),
#: summed per step (a large run decides a few at every look).
TELL_EVERY_S = 60.0
#: Waiting rows read per page, and the most pages one look reads: a run with more waiting
#: rows is read on at the next look from where this one stopped (a reply to a recipient
#: far down the run is decided within a few looks, not when the rows before it are).
PAGE_ROWS = 2000
PAGES = 10
#: Real waits in a row (each ``Timing.settle_real_s``) a rehearsal gives replies on their
#: way before its simulated clock jumps to a decision's deadline.
REAL_WAITS = 25


class Decisions:
    """Decides a run's conditional steps (see the module)."""

    def __init__(self, store: ConversationStore | None,
                 options: ConversationOptions | None, delays_s: Sequence[float], *,
                 retry_horizon_s: float) -> None:
        self.store = store
        self.retry_horizon = timedelta(seconds=retry_horizon_s)
        #: When this dispatch started listening (set by :meth:`start`).
        self.started_at: datetime | None = None
        self.options = options if store is not None else None
        self.delays_s = tuple(delays_s)
        self.look_at: datetime | None = None
        #: The earliest deadline among the rows still waiting (None: none known).
        self.wake: datetime | None = None
        #: Rows waiting at the last look.
        self.pending = 0
        self._tally: Counter[tuple[int, str]] = Counter()
        self._told_at: datetime | None = None
        self._looks = {c.step: c.looks_at for c in options.conditions} if options else {}
        #: Where the next look reads on (0: from the first row), and what the looks of the
        #: current pass over the rows found: their earliest deadline, rows waiting.
        self._after_id = 0
        self._pass_wake: datetime | None = None
        self._pass_pending = 0
        #: The clock's time of the last real waits for replies, how many were given, and
        #: the rows waiting when a series of them ran out (None: none ran out yet).
        self._waited_at: datetime | None = None
        self._real_waits = 0
        self._waited_out: int | None = None

    @property
    def active(self) -> bool:
        """Whether the run has steps that follow replies."""
        return self.options is not None

    def start(self, now: datetime) -> int:
        """Gate the run's conditional steps (before anything is sent); rows gated."""
        self.started_at = now
        if self.options is None or self.store is None:
            return 0
        return self.store.gate(self.options.gated_steps)

    def due(self, now: datetime) -> bool:
        """Whether it is time for another look while the run sends."""
        return self.active and (self.look_at is None or now >= self.look_at)

    def check(self, now: datetime) -> int:
        """Decide what can be decided at ``now``; how many rows were decided. Sets
        :attr:`wake` and :attr:`pending`."""
        self.look_at = now + timedelta(seconds=LOOK_EVERY_S)
        if self.options is None or self.store is None:
            return 0
        options, store = self.options, self.store
        clicks = any(c.kind.endswith("clicked") for c in options.conditions)
        writes: list[DecisionWrite] = []
        wake, pending = self._pass_wake, self._pass_pending
        after_id, ended = self._after_id, False
        for _page in range(PAGES):
            rows = store.gated(self._looks, limit=PAGE_ROWS, after_id=after_id, clicks=clicks)
            for row in rows:
                cond = options.condition(row.step)
                if cond is None:
                    continue
                decision = decide(cond, row.seen, now, self.heard)
                if isinstance(decision, Wait):
                    pending += 1
                    if decision.until is not None:
                        wake = decision.until if wake is None else min(wake, decision.until)
                elif isinstance(decision, Go):
                    delay = self.delays_s[row.step] if row.step < len(self.delays_s) else 0.0
                    writes.append(DecisionWrite(row, "go", decision.why,
                                                due_at=now + timedelta(seconds=delay),
                                                reply=decision.reply))
                elif isinstance(decision, Skip):
                    writes.append(DecisionWrite(
                        row, "skip", decision.why, reply=decision.reply,
                        branch=options.continuation(row.step, len(self.delays_s))))
            if len(rows) < PAGE_ROWS:
                ended = True
                break
            after_id = rows[-1].id
        if ended:  # a whole pass over the waiting rows: the next starts from the first
            self._after_id, self._pass_wake, self._pass_pending = 0, None, 0
            self.wake, self.pending = wake, pending
        else:  # rows left unread: read on at once
            self._after_id, self._pass_wake, self._pass_pending = after_id, wake, pending
            self.wake, self.pending = now, max(pending, 1)
        done = store.decide(writes, now) if writes else []
        self._tally.update((w.row.step, w.outcome) for w in done)
        if self._tally and self._told_at is not None:  # wake to tell them, on time
            tell_at = self._told_at + timedelta(seconds=TELL_EVERY_S)
            self.wake = tell_at if self.wake is None else min(self.wake, tell_at)
        return len(done)

    async def let_replies_in(self, now: datetime, real_s: float) -> bool:
        """A rehearsal (simulated clock, ``real_s`` > 0) with rows waiting: a short real
        wait so the replies on their way (the sandbox answers in real time) are stored
        before the clock jumps to a deadline; False once :data:`REAL_WAITS` were given at
        this time, or when the waiting rows are those a whole series of waits already saw
        go by with no reply (or on a real clock, where time itself does this)."""
        if real_s <= 0 or self.pending == 0:
            return False
        if self._waited_at != now:
            if self.pending == self._waited_out:
                return False  # nothing new was sent or decided since: no reply is coming
            self._waited_at, self._real_waits = now, 0
        if self._real_waits >= REAL_WAITS:
            self._waited_out = self.pending
            return False
        self._real_waits += 1
        await asyncio.sleep(real_s)
        return True

    def heard(self, deadline: datetime) -> datetime:
        """When the events sent by ``deadline`` have had their chance to arrive: a short
        grace while this dispatch listened; for a deadline before it started (a resume
        after a crash, a stop), the service's webhook retry horizon after its start."""
        grace = timedelta(seconds=EVENT_GRACE_S)
        ready = deadline + grace
        if self.started_at is not None and deadline < self.started_at + grace:
            ready = max(ready, self.started_at + self.retry_horizon)
        return ready

    def told(self, now: datetime, *, now_or_never: bool = False) -> list[str]:
        """The timeline's lines for the decisions taken since the last ones told (at most
        every :data:`TELL_EVERY_S`, unless ``now_or_never``); empty when none are due."""
        if not self._tally or self.options is None:
            return []
        if not now_or_never and self._told_at is not None \
                and now < self._told_at + timedelta(seconds=TELL_EVERY_S):
            return []
        tally, self._tally, self._told_at = self._tally, Counter(), now
        lines = []
        for step in sorted({s for s, _o in tally}):
            cond = self.options.condition(step)
            label = f"step {step}" + (f" {cond.name!r}" if cond and cond.name else "")
            goes, skipped = tally[(step, "go")], tally[(step, "skip")]
            lines.append(f"{label} ({cond.text if cond else 'condition'}): goes to {goes:,}, "
                         f"not to {skipped:,}")
        return lines


__all__ = ["LOOK_EVERY_S", "Decisions"]
