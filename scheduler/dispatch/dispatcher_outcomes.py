"""The dispatcher's outcomes: what each answer does to its row, written in turn-sized batches.

:class:`OutcomeRecording` is one role of :class:`scheduler.dispatch.dispatcher.Dispatcher`
(a base class of it, sharing its state): it decides what the queued answers do (rules in
:mod:`scheduler.dispatch.outcomes`), writes them with the next claim or in a transaction of
their own, settles the rows whose send timed out once their grace ends, and expires what
is left past the latest send time.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

from scheduler.dispatch import outcomes, reconcile
from scheduler.dispatch.channel import Channel
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import TimelineEntry
from scheduler.dispatch.senders import SenderPool
from scheduler.ledger.access import Connection
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.rows import DueDelivery
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.timeutil import Clock


class OutcomeRecording:
    """Settle, write and verify the outcomes of a run's sends (see the module)."""

    ledger: Ledger
    run_id: int
    options: DispatchOptions
    channel: Channel
    clock: Clock
    rng: random.Random
    events_received: bool
    pool: SenderPool | None
    on_progress: Callable[[dict[str, int]], None] | None
    progress_every_s: float
    _next_progress: float
    _outcomes: list[outcomes.Outcome]
    _pending: list[tuple[outcomes.Settlement, datetime]]
    _verify_at: datetime | None
    _buffer: deque[DueDelivery]
    _last_seq: int

    def _note(self, at: datetime, what: str, **facts: Any) -> None:
        raise NotImplementedError

    def _record(self, entry: TimelineEntry) -> None:
        raise NotImplementedError

    def _stop(self, status: str, reason: str) -> None:
        raise NotImplementedError

    def _settle_outcomes(self) -> None:
        """Decide what every queued answer does (rules in ``outcomes``); written later."""
        if not self._outcomes:
            return
        assert self.pool is not None
        batch, self._outcomes = self._outcomes, []
        now = self.clock()
        settlement = outcomes.settle(batch, self.pool, self.options, self.rng, now,
                                     events_received=self.events_received,
                                     verdict=self.channel.verdict)
        self._pending.append((settlement, now))
        if settlement.verifying:
            due = min(d for _id, d, _why in settlement.verifying)
            self._verify_at = due if self._verify_at is None else min(self._verify_at, due)
        for entry in settlement.notes:
            self._record(entry)
        if settlement.stop_reason is not None:
            self._stop(RunStatus.PAUSED, settlement.stop_reason)

    def _write_pending(self, conn: Connection) -> None:
        for settlement, at in self._pending:
            outcomes.apply(conn, self.run_id, settlement, self.options.step_delays_s, at)

    def _commit_pending(self) -> None:
        """Write the settled outcomes in a transaction of their own (nothing to claim)."""
        if not self._pending:
            return
        with self.ledger.transaction("record the outcomes of sends") as conn:
            self._write_pending(conn)
        self._pending.clear()
        self._report_progress()

    def _report_progress(self) -> None:
        if self.on_progress is not None and time.monotonic() >= self._next_progress:
            self._next_progress = time.monotonic() + self.progress_every_s
            self.on_progress(self.ledger.counts(self.run_id))

    def _verify_timeouts(self, now: datetime) -> None:
        """Rows whose send timed out: settle them from ``messages.sent`` once the grace ends."""
        if self._verify_at is None or now < self._verify_at:
            return
        with self.ledger.transaction("settle the rows being verified") as conn:
            settled = reconcile.settle_verifying(
                conn, self.run_id, now, at_least_once=self.options.at_least_once,
                step_delays_s=self.options.step_delays_s,
                proof_events=self.channel.proof_events)
        self._verify_at = self._earliest_verifying()
        if settled:
            self._buffer.clear()
            self._last_seq = -1

    def _earliest_verifying(self) -> datetime | None:
        return reconcile.earliest_verifying(self.ledger, self.run_id)

    def _expire_rest(self, now: datetime) -> None:
        with self.ledger.transaction("expire the rows past the latest time") as conn:
            n = dq.expire_pending(conn, self.run_id, now)
        self._note(now, f"latest send time reached: {n} deliveries expired")
