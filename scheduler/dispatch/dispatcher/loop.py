"""The dispatcher: claims due deliveries, paces them across senders, sends, records outcomes.

Order of events for one delivery, and why:

1. pick a sender that the pace allows now;
2. mark the row ``dispatching`` and **commit** (the store's ``write``), then
3. call the service through the run's channel; 4. queue the outcome; 5. write the outcomes
   of a batch with the next claim, in one transaction per loop turn.

A crash between 2 and 5 leaves the row ``dispatching``: ambiguous, reconciled from events at
the next start (``reconcile``), never re-sent blindly in the default at-most-once mode.
Everything that depends on time goes through the setup's ``Timing``, so a rehearsal runs a
whole campaign on a simulated clock in seconds. The roles share one
:class:`~scheduler.dispatch.dispatcher.run_state.RunState`: :class:`Claiming`, :class:`Settling`,
:class:`Waiting`, :class:`Control`, and the run's :class:`Ownership`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from scheduler.dispatch import waits
from scheduler.dispatch.channel import Channel, Quota, ServiceCalls
from scheduler.dispatch.conversation.decisions import Decisions
from scheduler.dispatch.dispatcher.care import SenderHealth
from scheduler.dispatch.dispatcher.claims import Claiming
from scheduler.dispatch.dispatcher.control import Control
from scheduler.dispatch.dispatcher.experiment import ABTest
from scheduler.dispatch.dispatcher.ownership import ownership_for
from scheduler.dispatch.dispatcher.recycling import RetryRules
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.dispatch.dispatcher.settling import Settling
from scheduler.dispatch.dispatcher.setup import RunSetup
from scheduler.dispatch.dispatcher.waiting import Waiting
from scheduler.dispatch.exceptions import RunStopped
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import RunResult, TimelineEntry
from scheduler.dispatch.senders import SenderPool, pool_for_run
from scheduler.dispatch.store import RunStores
from scheduler.ledger.states import RunStatus


class Dispatcher:
    """Dispatches one run until it is done, paused, cancelled or stopped."""

    def __init__(self, stores: RunStores, client: ServiceCalls, options: DispatchOptions, *,
                 channel: Channel, setup: RunSetup | None = None,
                 quotas: dict[str, Quota] | None = None) -> None:
        setup = setup or RunSetup()
        self.ctx = ctx = RunContext(stores, client, options, channel, setup, quotas or {})
        self.state = state = RunState(setup.timing.clock, setup.on_note)
        self.ownership = ownership_for(ctx)
        self.care = SenderHealth(ctx, state, setup.care) if setup.care is not None else None
        self.settling = Settling(ctx, state, self.care)
        self.control = Control(ctx, state, self.ownership, self.care)
        self.waiting = Waiting(ctx, state, self.control, self.settling)
        self.claims = Claiming(ctx, state, self.ownership, self.settling, self.care)
        self.trial = ABTest(ctx, state)
        self.recycling = RetryRules(ctx, state)
        # steps that follow replies (scheduler/dispatch/conversation): decided once each
        self.decisions = Decisions(stores.conversation, stores.run.options().conversation,
                                   options.step_delays_s,
                                   retry_horizon_s=options.engine.webhook_retry_horizon_s)

    @property
    def timeline(self) -> list[TimelineEntry]:
        """What happened, in order (waits, senders in and out of rotation, stops)."""
        return self.state.timeline

    @property
    def pool(self) -> SenderPool | None:
        """The run's senders (made when the dispatch starts)."""
        return self.state.pool

    # ------------------------------------------------------------------ public

    async def run(self) -> RunResult:
        """Dispatch until nothing is left (or a stop); always leaves the ledger consistent."""
        ctx, state = self.ctx, self.state
        now = ctx.clock()
        self.ownership.take()
        try:
            recovered = self.ownership.start(now)
            state.note(now, "dispatch started")
            self.decisions.start(now)
            state.verify_at = ctx.stores.queue.earliest_verifying()
            if any(recovered.values()):
                state.note(now, waits.recovered_note(recovered, now, state.verify_at,
                                                     ctx.zone),
                           kind="verifying", until=state.verify_at)
            state.pool = self._make_pool(now)
            shared = ctx.setup.shared
            if shared is not None:
                shared.join(ctx.run_id)
                state.pool.share(shared, ctx.run_id)
            if self.care is not None:
                self.care.start(now, self.control.day_start(now))
            if not state.pool.senders:
                state.stop(RunStatus.PAUSED, "the run has no senders: name them in the "
                           "campaign's `senders` and plan it again")
            await self._loop()
            for line in self.decisions.told(ctx.clock(), now_or_never=True):
                state.note(ctx.clock(), line, kind="decisions")  # the last ones taken
        finally:
            await self.waiting.drain()
            if ctx.setup.shared is not None and state.pool is not None:
                ctx.setup.shared.leave(ctx.run_id)
            self.ownership.close()
        return self._finish()

    # ------------------------------------------------------------------ set-up

    def _make_pool(self, now: datetime) -> SenderPool:
        ctx = self.ctx
        day_start = self.control.day_start(now)
        pool = pool_for_run(ctx.options, ctx.setup.rng, ctx.zone,
                            ctx.stores.queue.sent_today(day_start), day_start, ctx.quotas, now)
        if ctx.channel.one_call_per_sender:
            options = ctx.options
            pool.call_hold = timedelta(seconds=options.engine.whatsapp_call_timeout_s
                                       if ctx.setup.events_received
                                       else options.engine.voice_call_estimate_s)
        return pool

    # ------------------------------------------------------------------ main loop

    async def _loop(self) -> None:
        ctx, state = self.ctx, self.state
        options, queue = ctx.options, ctx.stores.queue
        window = options.window
        while True:
            now = ctx.clock()
            self.control.poll()
            if state.stop_status is not None:
                return
            self.settling.settle_answers()
            if state.stop_status is not None:
                return
            if options.latest is not None and now >= options.latest:
                self.settling.flush()
                self.settling.expire_rest(now)
                return
            if window is not None and not options.recipient_timezone \
                    and not window.is_open(now):
                await self.waiting.for_window(now, self.recycling.meanwhile)
                continue
            self.settling.verify_timeouts(now)
            if self.recycling.due(now):  # outcomes came in: retries as their rule fires
                self.settling.flush()
                self.recycling.check(now)
            if self.decisions.due(now):  # replies came in: the steps they choose
                self.settling.flush()
                self._decide(now)
            if not state.buffer and not self.claims.refill(now):
                self.settling.flush()
                if not state.inflight and not state.outcomes:
                    waiting, next_due = queue.work_left()
                    if waiting == 0:
                        if self.recycling.check(now):
                            continue  # attempts or fallbacks were planned
                        if not self.recycling.holds_run():
                            return
                        if not await self.recycling.let_events_in():
                            await self.waiting.idle(now, self.recycling.wake)
                        continue
                    # a send just made counts as awaited before the clock moves on (the
                    # last look was before it: its outcome would be judged a stride late)
                    if self.recycling.active and self.recycling.check(now):
                        continue
                    wake = self.recycling.wake
                    if wake is not None:
                        # a rehearsal gives awaited outcomes a real moment before its
                        # clock jumps to (or past) the first verdict's time
                        if (next_due is None or wake <= next_due) \
                                and await self.recycling.let_events_in():
                            continue
                        next_due = wake if next_due is None else min(next_due, wake)
                    if self.decisions.active and self._decide(now, idle=True):
                        continue  # steps were queued by their conditions
                    wake = self.decisions.wake
                    if wake is not None:
                        # a rehearsal gives replies on their way a real moment first
                        if (next_due is None or wake <= next_due) and await \
                                self.decisions.let_replies_in(now, ctx.setup.timing.settle_real_s):
                            continue
                        next_due = wake if next_due is None else min(next_due, wake)
                    released, wake = self.trial.check(now)  # an A/B test's held rest
                    if released:
                        continue
                    if wake is not None:
                        next_due = wake if next_due is None else min(next_due, wake)
                    self.waiting.note_recipients_wait(now, next_due, waiting)
                    if next_due is None and queue.earliest_verifying() is None:
                        queue.repair_waiting_steps(now)
                    await self.waiting.idle(now, next_due)
                else:
                    await self.waiting.for_answers(0.05)
                continue
            claimed, wake = self.claims.claim_ready(now)
            if claimed:
                continue
            self.settling.flush()
            await self.waiting.idle(now, wake)

    def _decide(self, now: datetime, *, idle: bool = False) -> bool:
        """Decide the steps waiting for replies; True when some were decided."""
        decided = self.decisions.check(now)
        for line in self.decisions.told(now, now_or_never=idle
                                        and self.decisions.pending == 0):
            self.state.note(now, line, kind="decisions")
        if decided:
            self.state.reread()  # the queued steps sit behind the read cursor
        return decided > 0

    def _finish(self) -> RunResult:
        ctx, state = self.ctx, self.state
        store = ctx.stores.run
        now = ctx.clock()
        if state.stop_status == RunStatus.CANCELLED:
            status = store.cancel()
        elif state.stop_status is not None:
            status = store.end(RunStatus.PAUSED, reason=state.stop_reason or "paused")
        else:
            status = store.end(RunStatus.COMPLETED, reason="every delivery is settled")
            if status == RunStatus.COMPLETED:
                state.note(now, "run completed")
            else:  # another worker ended it first (a cancel it obeyed)
                state.stop_reason = store.stop_reason()
        result = RunResult(ctx.run_id, status, store.counts(), state.stop_reason,
                           state.timeline)
        if status == RunStatus.PAUSED and state.fatal:
            raise RunStopped(f"run {ctx.run_id} paused: {state.stop_reason}")
        return result
