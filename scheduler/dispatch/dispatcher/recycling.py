"""The run's second chances: verdicts on watched rows, written once; a fallback run's wait.

A run planned with retry rules or a ``[fallback]`` marks the rows whose outcome may make
another attempt (``deliveries.watch``). :meth:`RetryRules.check` reads those that have left
``dispatching`` and asks :func:`scheduler.dispatch.recycle.judge.judge` what each outcome
means: another attempt of the step (a new row, due after the rule's delay inside its
window), the fallback step on another channel (a row of the fallback run), wait (the
outcome is not in, or ``after`` has not come), or nothing more. The store writes every
verdict but the waits in one transaction, each guarded by the row's ``watch`` (one worker
decides, even after a crash; the unique ``(first_id, attempt)`` index backs it).

The run does not end while a watched row waits for its verdict, and a fallback run does
not end while its parent may still hand it rows. Retry waves go on the timeline.

A rehearsal's clock is simulated while the sandbox's calls and reports take (a little)
real time: before simulated time moves past an outcome still awaited, the dispatcher
gives the receiver a short real while (``Timing.settle_real_s``), a bounded number of
times in a row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta

from scheduler.core.time_words import local_time
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.dispatch.recycle.judge import judge
from scheduler.dispatch.recycle.timeline import waves
from scheduler.dispatch.recycle.timing import recipient_zone
from scheduler.dispatch.recycle.verdicts import Fallback, Retry, Verdict, Wait
from scheduler.ledger.rows import WatchedRow
from scheduler.ledger.states import FINISHED_RUN_STATUSES, RunStatus
from scheduler.settings.retry_rules import RecycleOptions

#: How often (seconds of the run's clock) the watched rows are looked at while the run
#: still sends (outcomes arrive meanwhile; retries are planned as their rule fires).
LOOK_EVERY_S = 5.0
#: Watched rows read per page, and the most pages a look reads while every row it read
#: still waits (the oldest rows come first: their waits end first).
PAGE_ROWS = 2000
PAGES = 5
#: Real waits in a row (each ``Timing.settle_real_s``) a rehearsal gives awaited outcomes
#: before its simulated clock moves on.
REAL_WAITS = 60


class RetryRules:
    """The dispatcher's side of retry rules and fallbacks (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState) -> None:
        self.ctx = ctx
        self.state = state
        self.options: RecycleOptions | None = ctx.stores.run.options().recycle
        self.look_at: datetime | None = None
        #: Watched rows awaiting a verdict at the last look, and the earliest change.
        self.pending = 0
        self.wake: datetime | None = None
        self._real_waits = 0

    @property
    def active(self) -> bool:
        """Whether the run has rows to judge (retry rules or a fallback)."""
        return self.options is not None and (bool(self.options.steps)
                                             or self.options.fallback is not None)

    def due(self, now: datetime) -> bool:
        """Whether it is time for another look while the run still sends."""
        return self.active and (self.look_at is None or now >= self.look_at)

    def check(self, now: datetime) -> bool:
        """Judge the watched rows; True when rows became due (a retry or a fallback row
        may have to be read). Sets :attr:`pending` and :attr:`wake`."""
        if not self.active:
            return False
        assert self.options is not None
        store, ctx = self.ctx.stores.recycling, self.ctx
        decisions: list[tuple[WatchedRow, Verdict]] = []
        wake: datetime | None = None
        pending = 0
        after_id = 0
        for _page in range(PAGES):  # oldest first; more only while a page is all waits
            rows = store.watched(now, PAGE_ROWS, after_id=after_id)
            for row in rows:
                verdict = judge(row, self.options, channel=ctx.channel.name, now=now,
                                zone_for=lambda r: recipient_zone(r, ctx.options.timezone),
                                latest=ctx.options.latest)
                if isinstance(verdict, Wait):
                    pending += 1
                    wake = verdict.until if wake is None else min(wake, verdict.until)
                else:
                    decisions.append((row, verdict))
            if len(rows) < PAGE_ROWS or decisions:
                break
            after_id = rows[-1].id
        self.pending, self.wake = pending, wake
        self.look_at = now + timedelta(seconds=LOOK_EVERY_S)
        if not decisions:
            return False
        store.recycle(now, decisions)
        self._real_waits = 0
        self._tell(now, decisions)
        made = any(isinstance(v, Retry | Fallback) for _row, v in decisions)
        if made:
            self.state.reread()  # a retry sits behind the read cursor (same seq)
        return made

    def meanwhile(self, now: datetime) -> datetime | None:
        """While the run waits for its window: verdicts due now are taken (a fallback's
        ``after`` keeps its time); when to look again (None: no second chances)."""
        if not self.active:
            return None
        self.check(now)
        if self.pending == 0 or self.wake is None:
            return None  # nothing awaits a verdict (sends in flight were drained)
        return max(self.wake, now + timedelta(seconds=LOOK_EVERY_S))

    def _tell(self, now: datetime, decisions: Sequence[tuple[WatchedRow, Verdict]]) -> None:
        zone = self.ctx.zone
        for line in waves(decisions, lambda at: local_time(at, zone)):
            self.state.note(now, line, kind="retry_wave")

    def holds_run(self) -> bool:
        """Whether the run must not end yet: a watched row awaits its verdict, or (a
        fallback run) its parent may still hand it rows. A fallback run whose parent is
        paused pauses too (resumed with it)."""
        if self.pending > 0:
            return True
        parent = self.ctx.stores.recycling.parent()
        if parent is None:
            return False
        parent_id, status = parent
        if status == RunStatus.PAUSED:
            self.state.stop(RunStatus.PAUSED, f"its parent run {parent_id} is paused: this "
                            "fallback run goes on when that run is resumed")
            return True
        return status not in FINISHED_RUN_STATUSES

    async def let_events_in(self) -> bool:
        """A rehearsal (simulated clock) with outcomes awaited: a short real wait so the
        receiver can apply them before simulated time moves on; False once the real
        waits in a row are used up (or on a real clock, where time itself does this)."""
        real = self.ctx.setup.timing.settle_real_s
        if real <= 0 or self.pending == 0 or self._real_waits >= REAL_WAITS:
            return False
        self._real_waits += 1
        await asyncio.sleep(real)
        return True
