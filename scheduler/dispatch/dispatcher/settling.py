"""Settling: what each answer does to its row, written in turn-sized batches.

The rules are :func:`scheduler.dispatch.outcomes.settle`; here they are applied to the
answers the run's sends queued, the settlements kept until the next claim (written in the
same transaction) or written on their own before any wait, the rows whose send timed out
settled once their grace ends, and what is left past the latest send time expired.
"""

from __future__ import annotations

from datetime import datetime

from scheduler.core.timeutil import monotonic
from scheduler.dispatch import outcomes, reconcile
from scheduler.dispatch.dispatcher.care import SenderHealth
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.ledger.changes import AudienceCheck
from scheduler.ledger.states import RunStatus


class Settling:
    """Settle, write and verify the outcomes of a run's sends (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState, care: SenderHealth | None = None) -> None:
        self.ctx = ctx
        self.state = state
        self.care = care
        self._next_progress = 0.0

    def settle_answers(self) -> None:
        """Decide what every queued answer does; written with the next claim or flush."""
        state = self.state
        if not state.outcomes:
            return
        assert state.pool is not None
        batch, state.outcomes = state.outcomes, []
        now = self.ctx.clock()
        settlement = outcomes.settle(batch, state.pool, self.ctx.options, self.ctx.setup.rng,
                                     now, events_received=self.ctx.setup.events_received)
        state.pending.append((settlement, now))
        if self.care is not None and settlement.trouble:
            self.care.on_answers(settlement.trouble, now)
        if settlement.verifying:
            state.verify_by(min(d for _id, d, _why in settlement.verifying))
        for entry in settlement.notes:
            state.record(entry)
        if settlement.stop_reason is not None:
            state.stop(RunStatus.PAUSED, settlement.stop_reason, fatal=settlement.fatal)

    def claim_with_pending(self, claims: list[tuple[int, str]], now: datetime,
                           worker: str | None, *,
                           audience: AudienceCheck | None = None) -> set[int]:
        """Write the settled outcomes and claim ``claims`` in one transaction (committed
        before any of the new sends goes out); the ids that moved. Senders on a warm-up
        ramp are held to today's cap, counted in that transaction over every run."""
        caps = self.care.claim_caps() if self.care is not None else None
        pending = self.state.pending
        moved = self.ctx.stores.queue.write(pending, claims, now, worker=worker, caps=caps,
                                            audience=audience)
        self._match(pending, now)
        if caps:
            self._at_cap([(i, s) for i, s in claims if s in caps and i not in moved], now)
        self.state.pending.clear()
        self.report_progress()
        return moved

    def _at_cap(self, dropped: list[tuple[int, str]], now: datetime) -> None:
        """Claims the ledger's count kept back: their senders reached today's cap."""
        pool = self.state.pool
        if pool is None or self.care is None:
            return
        for sender in {s for _i, s in dropped}:
            _since, cap = self.care.claim_caps()[sender]
            pool.senders[sender].pace.daily.set_count(now, cap)

    def flush(self) -> None:
        """Write the settled outcomes in a transaction of their own (nothing to claim)."""
        if not self.state.pending:
            return
        self.ctx.stores.queue.write(self.state.pending)
        self._match(self.state.pending, self.ctx.clock())
        self.state.pending.clear()
        self.report_progress()

    def _match(self, written: list[tuple[outcomes.Settlement, datetime]], now: datetime
               ) -> None:
        """The sends just recorded as accepted, committed: tracking applies the events
        that arrived before their message ids were stored (``RunStores.match_events``)."""
        ids = [m for settlement, _at in written for _i, m in settlement.accepted if m]
        if ids:
            self.ctx.stores.match_events(ids, now)

    def report_progress(self) -> None:
        """Tell ``on_progress`` the run's counts (at most every ``progress_every_s``)."""
        setup = self.ctx.setup
        if setup.on_progress is not None and monotonic() >= self._next_progress:
            self._next_progress = monotonic() + setup.progress_every_s
            setup.on_progress(self.ctx.stores.run.counts())

    def verify_timeouts(self, now: datetime) -> None:
        """Rows whose send timed out: settle them from their proof once the grace ends."""
        state = self.state
        if state.verify_at is None or now < state.verify_at:
            return
        settled = reconcile.settle_verifying(
            self.ctx.stores.queue, self.ctx.channel, now,
            match_events=self.ctx.stores.match_events,
            at_least_once=self.ctx.options.at_least_once,
            step_delays_s=self.ctx.options.step_delays_s)
        state.verify_at = self.ctx.stores.queue.earliest_verifying()
        if settled:
            state.reread()

    def expire_rest(self, now: datetime) -> None:
        """The latest send time passed: expire every row still pending."""
        n = self.ctx.stores.queue.expire(now)
        self.state.note(now, f"latest send time reached: {n} deliveries expired")
