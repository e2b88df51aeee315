"""Control: the run's heartbeat, the operator's requests, senders held and sessions followed.

At most every :data:`~scheduler.dispatch.dispatcher.setup.CONTROL_EVERY_S` (of real time, or
of simulated time under a simulated clock) the dispatcher renews its heartbeat and reads
the run's pending request (pause, cancel), a ``serve`` worker follows the senders it holds,
and senders whose session is not connected leave the rotation. Ctrl-C and SIGTERM (the
setup's ``stop_event``) pause the run at once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from scheduler.core.timeutil import monotonic
from scheduler.dispatch import sessions_live
from scheduler.dispatch.dispatcher.care import SenderHealth
from scheduler.dispatch.dispatcher.ownership import Ownership
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.dispatch.dispatcher.setup import CONTROL_EVERY_S
from scheduler.ledger.states import RunStatus


class Control:
    """Obey the run's control requests in time (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState, ownership: Ownership,
                 care: SenderHealth | None = None) -> None:
        self.ctx = ctx
        self.state = state
        self.ownership = ownership
        self.care = care
        self._next_real = 0.0
        self._next_simulated: datetime | None = None

    def day_start(self, now: datetime) -> datetime:
        """The start of ``now``'s day in the campaign's zone (daily caps count from it)."""
        return now.astimezone(self.ctx.zone).replace(hour=0, minute=0, second=0,
                                                     microsecond=0)

    def poll(self) -> None:
        """Look at the stop event now, and at the ledger when a control poll is due."""
        state, stores = self.state, self.ctx.stores
        mono, now = monotonic(), self.ctx.clock()
        if self.ctx.setup.stop_event.is_set():
            state.stop(RunStatus.PAUSED, "interrupted (Ctrl-C or SIGTERM)")
        due_simulated = self._next_simulated is None or now >= self._next_simulated
        if mono < self._next_real and not due_simulated:
            return
        self._next_real = mono + CONTROL_EVERY_S
        self._next_simulated = now + timedelta(seconds=CONTROL_EVERY_S)
        request = stores.run.beat()
        if self.ownership.sync(state.pool, now, day_start=self.day_start(now)):
            state.reread()  # rows read for senders no longer held, or too few
            state.verify_at = stores.queue.earliest_verifying()  # a taken-over sender's rows
        care = self.care
        sessions_live.follow_sessions(stores.senders, state.pool, now, state.note,
                                      on_status=care.on_session if care else None)
        if care is not None and state.pool is not None:
            care.poll(now, self.day_start(now))
        if request == "pause":
            state.stop(RunStatus.PAUSED, "paused by the operator")
        elif request == "cancel":
            state.stop(RunStatus.CANCELLED, "cancelled by the operator")
