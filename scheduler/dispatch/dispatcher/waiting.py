"""Waiting: a closed window, recipients' own windows, idle turns, sends in flight.

Every wait goes through the setup's :class:`~scheduler.dispatch.dispatcher.setup.Timing`
and looks at the run's control requests in between, so pause and cancel are obeyed in time
and a rehearsal waits in simulated strides.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime

from scheduler.core.time_words import local_time
from scheduler.dispatch import waits
from scheduler.dispatch.dispatcher.control import Control
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.dispatch.dispatcher.settling import Settling
from scheduler.dispatch.dispatcher.setup import CONTROL_EVERY_S


class Waiting:
    """The waits of a run's dispatch loop (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState, control: Control,
                 settling: Settling) -> None:
        self.ctx = ctx
        self.state = state
        self.control = control
        self.settling = settling

    async def for_window(self, now: datetime,
                         meanwhile: Callable[[datetime], datetime | None] | None = None
                         ) -> None:
        """The campaign's window is closed: wait until it opens (or the latest time);
        ``meanwhile(now)`` is called between strides and says when it wants to be called
        again (a verdict due while the window is closed is taken on time)."""
        options, state, timing = self.ctx.options, self.state, self.ctx.setup.timing
        assert options.window is not None
        opens = options.window.next_open(now)
        await self.drain()
        # dated when the window closed (the loop may notice later: a sender at its cap
        # waits in long strides), not before this dispatch started
        closed = options.window.closed_since(now)
        at = now if closed is None or state.pool is None else max(closed,
                                                                  state.pool.started_at)
        why = waits.holiday_words(options.window.holidays_between(now, opens))
        state.note(at, f"window closed{why}; paused until {local_time(opens, self.ctx.zone)}",
                   kind="window_closed", until=opens)
        until = waits.capped(opens, options.latest)
        assert until is not None
        wake: datetime | None = None
        while timing.clock() < until:
            self.control.poll()
            if state.stop_status is not None:
                return
            if meanwhile is not None and (wake is None or timing.clock() >= wake):
                wake = meanwhile(timing.clock())
            step = until if wake is None else min(until, max(wake, timing.clock()))
            await timing.sleep(min(timing.stride_s,
                                   max((step - timing.clock()).total_seconds(), 0.001)))
        if timing.clock() >= opens:  # else the latest send time came first: the loop expires
            state.note(timing.clock(), "window open; resumed", kind="window_open")

    def note_recipients_wait(self, now: datetime, next_due: datetime | None,
                             waiting: int) -> None:
        """Say once that the run waits for its recipients' own windows (a long gap)."""
        options, state = self.ctx.options, self.state
        if state.waiting_noted or not options.recipient_timezone:
            return
        for opens in [at for at in state.deferred if at < now]:
            del state.deferred[opens]  # those windows have opened
        note = waits.recipients_wait_note(
            now, next_due, waiting, deferred=waits.deferred_to(state.deferred, next_due),
            zone=self.ctx.zone, zone_name=options.timezone, latest=options.latest)
        if note is not None:
            state.note(now, note, kind="recipients_wait",
                       until=waits.capped(next_due, options.latest))
            state.waiting_noted = True

    async def idle(self, now: datetime, until: datetime | None) -> None:
        """Wait until ``until`` (or a short while), waking early when a send finishes."""
        until = waits.capped(until, self.ctx.options.latest)  # what is left expires on time
        wait = CONTROL_EVERY_S if until is None else max(0.0, (until - now).total_seconds())
        if self.state.inflight:
            await self.for_answers(min(wait, CONTROL_EVERY_S))
        else:
            await self.ctx.setup.timing.sleep(min(wait, self.ctx.setup.timing.stride_s))

    async def for_answers(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for a batch of sends, so one flush and claim serve
        many."""
        state = self.state
        state.want = max(1, min(len(state.inflight), self.ctx.options.engine.send_concurrency // 4))
        if state.inflight and len(state.outcomes) < state.want:
            state.batch_done.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.batch_done.wait(), max(timeout, 0.001))

    async def drain(self) -> None:
        """Let in-flight sends finish and write their outcomes."""
        if self.state.inflight:
            await asyncio.wait(set(self.state.inflight))
        self.settling.settle_answers()
        self.settling.flush()
