"""Claiming: read due rows ahead, pick what the senders' pace allows, claim, then send.

Each turn picks from the rows read ahead (:func:`scheduler.dispatch.picking.pick`: the
senders' pace, caps and calls, the recipients' own windows), writes the outcomes settled
since the last turn and the claim in one transaction (committed before any of the new
sends goes out), and launches the sends; their answers are queued for
:class:`~scheduler.dispatch.dispatcher.settling.Settling`.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from scheduler.dispatch import caps, limits, picking
from scheduler.dispatch.channel import Answer
from scheduler.dispatch.dispatcher.care import SenderHealth
from scheduler.dispatch.dispatcher.ownership import Ownership
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState, SendOutcome
from scheduler.dispatch.dispatcher.settling import Settling
from scheduler.dispatch.dispatcher.setup import CONTROL_EVERY_S
from scheduler.dispatch.senders import SenderState
from scheduler.ledger.changes import AudienceCheck
from scheduler.ledger.rows import DueDelivery
from scheduler.service.exceptions import ServiceError

#: Rows read from the ledger per refill.
REFILL = 512
#: How often (seconds) a ``calls`` run looks for the end of its senders' calls.
CALL_POLL_S = 0.1


class Claiming:
    """Read, pick, claim and send a run's due rows (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState, ownership: Ownership,
                 settling: Settling, care: SenderHealth | None = None) -> None:
        self.care = care
        self.ctx = ctx
        self.state = state
        self.ownership = ownership
        self.settling = settling
        #: Senders at their daily cap or plan limit: said once each, dated when reached.
        self.caps = caps.CapWatch(ctx.options, service_quotas=ctx.quotas,
                                  nth_send=ctx.stores.queue.nth_send)
        self._closed_until = limits.recipient_window(ctx.options)
        # enough rows that a bulk channel finds full groups in the buffer
        self._refill_size = max(REFILL, 2 * ctx.channel.batch_size)

    def refill(self, now: datetime) -> bool:
        """Read the next due rows into the buffer; False when none is due."""
        state = self.state
        rows = self.ownership.due(now, limit=self._refill_size, after_seq=state.last_seq)
        if not rows and state.last_seq >= 0:
            state.last_seq = -1  # retried rows may sit behind the cursor
            rows = self.ownership.due(now, limit=self._refill_size)
        if rows:
            state.last_seq = rows[-1].seq
            state.buffer.extend(rows)
        return bool(rows)

    def claim_ready(self, now: datetime) -> tuple[int, datetime | None]:
        """Claim (and commit) every buffered row a sender may send now; launch the sends.
        How many rows were picked, and when to look again (None: no sooner than usual)."""
        ctx, state = self.ctx, self.state
        pool = state.pool
        assert pool is not None
        events = ctx.setup.events_received
        limits.follow_sender_calls(ctx.stores.senders, pool, ctx.options, now,
                                   events_received=events)
        picked = picking.pick(
            state.buffer, pool, ctx.channel, now,
            room=ctx.options.engine.send_concurrency - len(state.inflight),
            call_room=limits.call_room(ctx.stores.senders, ctx.channel, ctx.options, now,
                                       events_received=events),
            closed_until=self._closed_until)
        for entry in self.caps.look(pool, [g.sender for g in picked.groups],
                                    stuck=picked.wake is not None, now=now):
            state.record(entry)
        if picked.deferred:
            ctx.stores.queue.defer(picked.deferred)
            state.deferred.update(opens for _id, opens in picked.deferred)
            if self._closed_until is not None:  # a state holiday: said once
                for what, until in self._closed_until.notes(ctx.zone):
                    state.note(now, what, kind="holiday", until=until)
        wake = picked.wake
        if picked.calls_full:
            wake = now + timedelta(seconds=CONTROL_EVERY_S)
        if pool.holding_calls():  # a call may end any moment: look again soon
            soon = now + timedelta(seconds=CALL_POLL_S)
            wake = soon if wake is None else min(wake, soon)
        if not picked.groups:
            return 0, wake
        # one transaction per loop turn: the outcomes settled since the last one, then
        # the claim, committed together before any of the new sends goes out
        moved = self.settling.claim_with_pending(
            [(r.id, g.sender.name) for g in picked.groups for r in g.rows], now,
            self.ownership.claim_as(), audience=self._audience(picked.groups, now))
        if state.waiting_noted:
            state.note(now, "recipients' own time zones: a window opened; sending resumed",
                       kind="recipients_resume")
        state.waiting_noted = False
        for group in picked.groups:
            # a row skipped since it was read (opt-out, cancel) did not move: not sent
            rows = [row for row in group.rows if row.id in moved]
            if rows:
                task = asyncio.ensure_future(self._send(rows, group.sender))
                state.inflight.add(task)
                task.add_done_callback(state.inflight.discard)
        return picked.rows, wake

    def _audience(self, groups: list[picking.Group], now: datetime) -> AudienceCheck | None:
        """The campaign's audience rules for this claim (None: it has none)."""
        o = self.ctx.options
        if o.max_per_day is None and o.max_per_week is None and o.hold_unengaged_after is None:
            return None
        day_start = now.astimezone(self.ctx.zone).replace(hour=0, minute=0, second=0,
                                                          microsecond=0)
        return AudienceCheck(o.max_per_day, o.max_per_week, o.hold_unengaged_after, day_start,
                             {r.id: r.to for g in groups for r in g.rows})

    async def _send(self, rows: list[DueDelivery], sender: SenderState) -> None:
        try:
            answers = await self.ctx.channel.send(self.ctx.client, rows, sender.name)
        except ServiceError as exc:
            answers = [Answer(error=exc) for _ in rows]
        state = self.state
        state.outcomes.extend(SendOutcome(row, sender, a.message_id, a.error, a.details)
                              for row, a in zip(rows, answers, strict=True))
        if len(state.outcomes) >= state.want:
            state.batch_done.set()
