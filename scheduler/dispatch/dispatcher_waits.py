"""The dispatcher's waits: a closed window, recipients' own windows, idle turns, sends in flight.

:class:`Waiting` is one role of :class:`scheduler.dispatch.dispatcher.Dispatcher` (a base
class of it, sharing its state). Every wait goes through the injected ``clock`` and
``sleep`` and looks at the run's control requests in between, so pause and cancel are
obeyed in time and a rehearsal waits in simulated strides.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, tzinfo
from typing import Any

from scheduler.dispatch import outcomes, waits
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.senders import SenderPool
from scheduler.display import local_time
from scheduler.timeutil import Clock

#: How often (real seconds) the owner checks for pause/cancel and writes its heartbeat.
CONTROL_EVERY_S = 0.5


class Waiting:
    """The waits of a run's dispatch loop (see the module)."""

    options: DispatchOptions
    clock: Clock
    sleep: Callable[[float], Awaitable[None]]
    idle_chunk_s: float
    pool: SenderPool | None
    _zone: tzinfo
    _inflight: set[asyncio.Task[None]]
    _outcomes: list[outcomes.Outcome]
    _batch_done: asyncio.Event
    _want: int
    _deferred: Counter[datetime]
    _waiting_noted: bool
    _stop_status: str | None

    def _note(self, at: datetime, what: str, **facts: Any) -> None:
        raise NotImplementedError

    def _control(self) -> None:
        raise NotImplementedError

    def _settle_outcomes(self) -> None:
        raise NotImplementedError

    def _commit_pending(self) -> None:
        raise NotImplementedError

    async def _wait_for_window(self, now: datetime) -> None:
        assert self.options.window is not None
        opens = self.options.window.next_open(now)
        await self._drain()
        # dated when the window closed (the loop may notice later: a sender at its cap
        # waits in long strides), not before this dispatch started
        closed = self.options.window.closed_since(now)
        at = now if closed is None or self.pool is None else max(closed, self.pool.started_at)
        self._note(at, f"window closed; paused until {local_time(opens, self._zone)}",
                   kind="window_closed", until=opens)
        until = waits.capped(opens, self.options.latest)
        assert until is not None
        while self.clock() < until:
            self._control()
            if self._stop_status is not None:
                return
            await self.sleep(min(self.idle_chunk_s, (until - self.clock()).total_seconds()))
        if self.clock() >= opens:  # else the latest send time came first: the loop expires
            self._note(self.clock(), "window open; resumed", kind="window_open")

    def _note_recipients_wait(self, now: datetime, next_due: datetime | None,
                              waiting: int) -> None:
        """Say once that the run waits for its recipients' own windows (a long gap)."""
        if self._waiting_noted or not self.options.recipient_timezone:
            return
        for opens in [at for at in self._deferred if at < now]:
            del self._deferred[opens]  # those windows have opened
        note = waits.recipients_wait_note(
            now, next_due, waiting, deferred=waits.deferred_to(self._deferred, next_due),
            zone=self._zone,
            zone_name=self.options.timezone, latest=self.options.latest)
        if note is not None:
            self._note(now, note, kind="recipients_wait",
                       until=waits.capped(next_due, self.options.latest))
            self._waiting_noted = True

    async def _idle(self, now: datetime, until: datetime | None) -> None:
        """Wait until ``until`` (or a short while), waking early when a send finishes."""
        until = waits.capped(until, self.options.latest)  # what is left expires on time
        wait = CONTROL_EVERY_S if until is None else max(0.0, (until - now).total_seconds())
        if self._inflight:
            await self._wait_inflight(min(wait, CONTROL_EVERY_S))
        else:
            await self.sleep(min(wait, self.idle_chunk_s))

    async def _wait_inflight(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for a batch of sends, so one flush and claim serve many."""
        self._want = max(1, min(len(self._inflight), self.options.concurrency // 4))
        if self._inflight and len(self._outcomes) < self._want:
            self._batch_done.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._batch_done.wait(), max(timeout, 0.001))

    async def _drain(self) -> None:
        """Let in-flight sends finish and commit their outcomes."""
        if self._inflight:
            await asyncio.wait(set(self._inflight))
        self._settle_outcomes()
        self._commit_pending()
