"""Settling: what each answer does to its row, written in turn-sized batches.

:func:`settle` turns each outcome into ledger changes (a
:class:`~scheduler.dispatch.dispatcher.run_state.Settlement`) and tells the sender pool what
happened; :class:`Settling` applies it to the answers the run's sends queued, keeps the
settlements until the next claim (written in the same transaction by the run's store,
:meth:`scheduler.dispatch.store.QueueStore.write`) or writes them on their own before any
wait, settles the rows whose send timed out once their grace ends, and expires what is
left past the latest send time. The rules, in one place:

- accepted → ``accepted`` with its ``messageId``; the recipient's next step is released;
  events about that id stored before it (``messages.sent`` often comes first) are matched
  by tracking once that transaction commits (``RunStores.match_events``, from the wiring);
- ``fail`` (a 4xx about the message) → ``failed`` at once, with the service's text;
- ``stop_run`` (401/403) → the row goes back to ``planned``; the run stops and says why;
- ``sender_down`` → back to ``planned`` for another sender; the sender cools off;
- ``ambiguous`` (time-out, dropped connection) → verified against ``messages.sent`` when
  events are received; otherwise ``unknown`` (at-most-once) or sent again (at-least-once);
- ``out_of_funds`` (the wallet ran out) → back to ``planned``; the run pauses and says how
  many were not sent;
- ``retry`` / ``throttled`` → back to ``planned`` after back-off or ``Retry-After``, up to
  ``max_attempts``, then ``failed``; a throttled row is due again at once when another
  sender is free (its own waits out ``Retry-After``; another takes the row).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from scheduler.core.timeutil import monotonic
from scheduler.dispatch import reconcile
from scheduler.dispatch.dispatcher.care import SenderHealth
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState, SendOutcome, Settlement
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import TimelineEntry
from scheduler.dispatch.retry import Verdict, classify, retry_delay, stop_reason_for
from scheduler.dispatch.senders import SenderPool
from scheduler.ledger.changes import AudienceCheck
from scheduler.ledger.states import RunStatus
from scheduler.service.exceptions import RateLimited


def settle(outcomes: list[SendOutcome], pool: SenderPool, options: DispatchOptions,
           rng: random.Random, now: datetime, *, events_received: bool) -> Settlement:
    """Decide what each outcome does (see the module doc, and the error rules of
    :func:`~scheduler.dispatch.retry.classify`); updates the senders' health."""
    out = Settlement(step_delays_s=options.step_delays_s)
    unpaid = 0
    for o in outcomes:
        row = o.row
        if o.error is None:
            out.accepted.append((row.id, o.message_id))
            if o.details:
                out.details.append((row.id, o.details))
            out.released.append((row.to, row.step, o.sender.name))
            pool.on_accepted(o.sender)
            continue
        kind, why = classify(o.error), str(o.error)
        if kind is Verdict.FAIL:
            out.failed.append((row.id, "", why))
            out.stopped.append((row.to, row.step))
        elif kind is Verdict.OUT_OF_FUNDS:
            out.retries.append((row.id, now, why))
            unpaid += 1
        elif kind is Verdict.STOP_RUN:
            out.retries.append((row.id, now, why))
            out.stop_reason = stop_reason_for(o.error)
            out.fatal = True
        elif kind is Verdict.SENDER_DOWN:
            pool.on_down(o.sender, now, why)
            out.retries.append((row.id, now, why))
            out.notes.append(TimelineEntry(now, f"sender {o.sender.name} paused: {why}",
                                           kind="sender_down", sender=o.sender.name, why=why))
        elif kind is Verdict.AMBIGUOUS:
            out.trouble.append((o.sender.name, "server_errors"))
            if events_received:
                due = now + timedelta(seconds=options.engine.verify_grace_s)
                out.verifying.append((row.id, due, f"{why}; verifying against events"))
            elif options.at_least_once:
                out.retries.append((row.id, now, why))
            else:
                out.unknown.append((row.id, "", f"ambiguous: {why}"))
                out.stopped.append((row.to, row.step))
        else:
            out.trouble.append((o.sender.name, "rate_limited" if kind is Verdict.THROTTLED
                                else "server_errors"))
            _retry_later(o, kind, why, pool, options, rng, now, out)
    if unpaid and out.stop_reason is None:
        out.stop_reason = (
            f"the account's wallet ran out: the service skipped {unpaid} "
            f"{'recipient' if unpaid == 1 else 'recipients'}, which wait in the plan with "
            "everything not yet sent; top up the wallet, then `campaign resume` the run")
    return out


def _retry_later(o: SendOutcome, verdict: Verdict, why: str, pool: SenderPool,
                 options: DispatchOptions, rng: random.Random, now: datetime,
                 out: Settlement) -> None:
    retry_after = o.error.retry_after if isinstance(o.error, RateLimited) else None
    if verdict is Verdict.THROTTLED:
        pool.on_throttled(o.sender, now, retry_after)
    elif pool.on_failure(o.sender, now, why):
        out.notes.append(TimelineEntry(now, f"sender {o.sender.name} paused: kept failing "
                                       f"({why})", kind="sender_down", sender=o.sender.name,
                                       why=f"kept failing ({why})"))
    attempts = o.row.attempts + 1
    if attempts >= options.engine.send_max_attempts:
        out.failed.append((o.row.id, "", f"gave up after {attempts} attempts: {why}"))
        out.stopped.append((o.row.to, o.row.step))
        return
    if verdict is Verdict.THROTTLED and any(
            s is not o.sender and s.held_reason is None
            and (s.blocked_until is None or s.blocked_until <= now)
            for s in pool.senders.values()):
        # a 429 is about the sender (it waits out Retry-After), not the row: another
        # sender of the run, not blocked itself, may send it now (when every sender is
        # blocked, an account-wide storm, the row waits: it would only spend attempts)
        delay = 0.0
    else:
        delay = retry_delay(verdict, attempts, rng, retry_after=retry_after,
                            base_s=options.engine.send_backoff_base_s,
                            cap_s=options.engine.send_backoff_cap_s)
    out.retries.append((o.row.id, now + timedelta(seconds=delay), why))


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
        settlement = settle(batch, state.pool, self.ctx.options, self.ctx.setup.rng,
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

    def _match(self, written: list[tuple[Settlement, datetime]], now: datetime
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
