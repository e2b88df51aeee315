"""The dispatcher: claims due deliveries, paces them across senders, sends, records outcomes.

Order of events for one delivery, and why:

1. pick a sender that the pace allows now;
2. mark the row ``dispatching`` and **commit** (``ledger.queries.dispatch.claim``), then
3. call the service through the run's channel; 4. queue the outcome; 5. write the outcomes
   of a batch with the next claim, in one transaction per loop turn.

A crash between 2 and 5 leaves the row ``dispatching``: ambiguous, reconciled from events at
the next start (``reconcile``), never re-sent blindly in the default at-most-once mode.
Everything that depends on time goes through the injected ``clock`` and ``sleep``, so a
rehearsal runs a whole campaign on a simulated clock in seconds.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from scheduler.dispatch import caps, limits, outcomes, picking, reconcile, sessions_live, waits
from scheduler.dispatch.channel import Answer, Channel, Quota, ServiceCalls
from scheduler.dispatch.dispatcher_outcomes import OutcomeRecording
from scheduler.dispatch.dispatcher_waits import CONTROL_EVERY_S, Waiting
from scheduler.dispatch.exceptions import RunStopped
from scheduler.dispatch.leases import LeaseGate, Seat
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import RunResult, TimelineEntry
from scheduler.dispatch.senders import SenderPool, SenderState, pool_for_run
from scheduler.dispatch.shared_senders import SharedSenders
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.rows import DueDelivery
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.exceptions import ServiceError
from scheduler.timeutil import Clock, utcnow
from scheduler.units import load_zone

#: Rows read from the ledger per refill.
REFILL = 512
#: How often (seconds) a ``calls`` run looks for the end of its senders' calls.
CALL_POLL_S = 0.1


async def _real_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class Dispatcher(OutcomeRecording, Waiting):
    """Dispatches one run until it is done, paused, cancelled or stopped."""

    def __init__(
        self, ledger: Ledger, client: ServiceCalls, run_id: int, options: DispatchOptions, *,
        channel: Channel | None = None, clock: Clock = utcnow,
        sleep: Callable[[float], Awaitable[None]] = _real_sleep,
        rng: random.Random | None = None, events_received: bool = False,
        on_progress: Callable[[dict[str, int]], None] | None = None,
        progress_every_s: float = 0.0,
        stop_event: asyncio.Event | None = None,
        quotas: dict[str, Quota] | None = None,
        on_note: Callable[[TimelineEntry], None] | None = None, seat: Seat | None = None,
        shared: SharedSenders | None = None,
    ) -> None:
        self.ledger = ledger
        self.client = client
        #: The process's other dispatchers' claims per sender (``campaign serve``).
        self.shared = shared
        if channel is None:
            from scheduler.dispatch.channels import channel_for

            channel = channel_for("whatsapp")
        self.channel = channel
        self.run_id = run_id
        self.options = options
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.events_received = events_received
        self.on_progress = on_progress
        # counting a run's rows by state is a query over the whole run: a progress bar
        # asks for it at most this often (real seconds); 0 = after every flush
        self.progress_every_s = progress_every_s
        self._next_progress = 0.0
        self.stop_event = stop_event or asyncio.Event()
        self.timeline: list[TimelineEntry] = []
        self._outcomes: list[outcomes.Outcome] = []
        # settled outcomes not yet written: they go out with the next claim, in the same
        # transaction (one commit per loop turn), or on their own before any wait
        self._pending: list[tuple[outcomes.Settlement, datetime]] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._batch_done = asyncio.Event()  # set when ``_want`` outcomes are waiting
        self._want = 1
        self._buffer: deque[DueDelivery] = deque()
        self._last_seq = -1
        self._stop_reason: str | None = None
        self._stop_status: str | None = None
        self._next_control = 0.0
        self._next_control_sim: datetime | None = None
        # With a simulated clock waiting costs nothing: wait in long strides. With the real
        # one, never wait longer than the control poll, so pause/cancel are obeyed in time.
        self.idle_chunk_s = CONTROL_EVERY_S if sleep is _real_sleep else 3600.0
        self._zone = load_zone(options.timezone)
        self.pool: SenderPool | None = None
        #: The earliest end of grace of a row being verified (None: no such row), so the
        #: ledger is only asked when one may be due, not at every turn of the loop.
        self._verify_at: datetime | None = None
        self.quotas = quotas or {}
        self._closed_until = limits.recipient_window(options)
        # enough rows that a bulk channel finds full groups in the buffer
        self._refill_size = max(REFILL, 2 * channel.batch_size)
        self.on_note = on_note
        # rows held back for their recipient's own window, by when it opens (a few zones,
        # so a few keys), and whether the timeline says the run waits for them (see
        # scheduler.dispatch.waits)
        self._deferred: Counter[datetime] = Counter()
        self._waiting_noted = False
        #: Senders at their daily cap or plan limit: said once each, dated when reached.
        self._caps = caps.CapWatch(options, service_quotas=self.quotas,
                                   nth_send=caps.ledger_nth_send(ledger))
        #: Inside a ``campaign serve`` worker on PostgreSQL: its leases decide the senders.
        self.gate = (LeaseGate(seat, run_id, options.senders)
                     if seat is not None and seat.usable() is not None else None)

    # ------------------------------------------------------------------ public

    async def run(self) -> RunResult:
        """Dispatch until nothing is left (or a stop); always leaves the ledger consistent."""
        now = self.clock()
        if self.gate is None:  # a worker's run has no single owner (see dispatch.leases)
            self.ledger.acquire(self.run_id)
        try:
            self.ledger.set_status(self.run_id, RunStatus.RUNNING,
                                   keep_control=self.gate is not None)
            self._note(now, "dispatch started")
            if self.gate is not None:
                self.gate.settle_orphans()
            recovered = {} if self.gate is not None else reconcile.recover_after_crash(
                self.ledger, self.run_id, now, at_least_once=self.options.at_least_once,
                grace_s=self.options.verify_grace_s if self.events_received else 0.0,
                step_delays_s=self.options.step_delays_s,
                proof_events=self.channel.proof_events,
            )
            self._verify_at = self._earliest_verifying()
            if any(recovered.values()):
                self._note(now, waits.recovered_note(recovered, now, self._verify_at, self._zone),
                           kind="verifying", until=self._verify_at)
            self.pool = self._make_pool(now)
            if self.shared is not None:
                self.shared.join(self.run_id)
                self.pool.share(self.shared, self.run_id)
            if not self.pool.senders:
                self._stop(RunStatus.PAUSED, "the run has no senders: name them in the "
                           "campaign's `senders` and plan it again")
            await self._loop()
        finally:
            await self._drain()
            if self.shared is not None and self.pool is not None:
                self.shared.leave(self.run_id)
            if self.gate is None:
                self.ledger.release(self.run_id)
            else:
                self.gate.close()
        return self._finish()

    # ------------------------------------------------------------------ set-up

    def _day_start(self, now: datetime) -> datetime:
        """The start of ``now``'s day in the campaign's zone (daily caps count from it)."""
        return now.astimezone(self._zone).replace(hour=0, minute=0, second=0, microsecond=0)

    def _make_pool(self, now: datetime) -> SenderPool:
        day_start = self._day_start(now)
        with self.ledger.read("count today's sends per sender") as conn:
            sent_today = dq.sent_today_by_sender(conn, day_start)
        pool = pool_for_run(self.options, self.rng, self._zone, sent_today, day_start,
                            self.quotas, now)
        if self.channel.one_call_per_sender:
            options = self.options
            pool.call_hold = timedelta(seconds=options.whatsapp_call_timeout_s
                                       if self.events_received
                                       else options.voice_call_estimate_s)
        return pool

    # ------------------------------------------------------------------ main loop

    async def _loop(self) -> None:
        assert self.pool is not None
        window = self.options.window
        while True:
            now = self.clock()
            self._control()
            if self._stop_status is not None:
                return
            self._settle_outcomes()
            if self._stop_status is not None:
                return
            if self.options.latest is not None and now >= self.options.latest:
                self._commit_pending()
                self._expire_rest(now)
                return
            if window is not None and not self.options.recipient_timezone \
                    and not window.is_open(now):
                await self._wait_for_window(now)
                continue
            self._verify_timeouts(now)
            if not self._buffer and not self._refill(now):
                self._commit_pending()
                if not self._inflight and not self._outcomes:
                    with self.ledger.read("look for work left") as conn:
                        waiting = dq.pending_count(conn, self.run_id)
                        if waiting == 0:
                            return
                        next_due = dq.next_due_time(conn, self.run_id)
                    self._note_recipients_wait(now, next_due, waiting)
                    if next_due is None and self._earliest_verifying() is None:
                        with self.ledger.transaction("release waiting steps") as conn:
                            dq.repair_waiting_steps(conn, self.run_id, now)
                    await self._idle(now, next_due)
                else:
                    await self._wait_inflight(0.05)
                continue
            claimed, wake = self._claim_ready(now)
            if claimed:
                continue
            self._commit_pending()
            await self._idle(now, wake)

    def _refill(self, now: datetime) -> bool:
        due = dq.due_deliveries if self.gate is None else self.gate.due
        with self.ledger.read("read due deliveries") as conn:
            rows = due(conn, self.run_id, now, limit=self._refill_size, after_seq=self._last_seq)
            if not rows and self._last_seq >= 0:
                self._last_seq = -1  # retried rows may sit behind the cursor
                rows = due(conn, self.run_id, now, limit=self._refill_size)
        if rows:
            self._last_seq = rows[-1].seq
            self._buffer.extend(rows)
        return bool(rows)

    def _claim_ready(self, now: datetime) -> tuple[int, datetime | None]:
        """Claim (and commit) every buffered row a sender may send now; launch the sends."""
        assert self.pool is not None
        limits.follow_sender_calls(self.ledger, self.run_id, self.pool, self.options, now,
                                   events_received=self.events_received)
        picked = picking.pick(
            self._buffer, self.pool, self.channel, now,
            room=self.options.concurrency - len(self._inflight),
            call_room=limits.call_room(self.ledger, self.run_id, self.channel, self.options,
                                       now, events_received=self.events_received),
            closed_until=self._closed_until)
        for entry in self._caps.look(self.pool, [g.sender for g in picked.groups],
                                     stuck=picked.wake is not None, now=now):
            self._record(entry)
        if picked.deferred:
            with self.ledger.transaction("defer deliveries to their window") as conn:
                dq.defer(conn, picked.deferred)
            self._deferred.update(opens for _id, opens in picked.deferred)
        wake = picked.wake
        if picked.calls_full:
            wake = now + timedelta(seconds=CONTROL_EVERY_S)
        if self.pool.holding_calls():  # a call may end any moment: look again soon
            soon = now + timedelta(seconds=CALL_POLL_S)
            wake = soon if wake is None else min(wake, soon)
        if not picked.groups:
            return 0, wake
        # one transaction per loop turn: the outcomes settled since the last one, then
        # the claim, committed together before any of the new sends goes out
        with self.ledger.transaction("record outcomes and claim deliveries") as conn:
            self._write_pending(conn)
            claim = dq.claim if self.gate is None else self.gate.claim
            moved = claim(conn, [(r.id, g.sender.name) for g in picked.groups
                                 for r in g.rows], now)
        self._pending.clear()
        self._report_progress()
        if self._waiting_noted:
            self._note(now, "recipients' own time zones: a window opened; sending resumed",
                       kind="recipients_resume")
        self._waiting_noted = False
        for group in picked.groups:
            # a row skipped since it was read (opt-out, cancel) did not move: not sent
            rows = [row for row in group.rows if row.id in moved]
            if rows:
                task = asyncio.ensure_future(self._send(rows, group.sender))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
        return picked.rows, wake

    async def _send(self, rows: list[DueDelivery], sender: SenderState) -> None:
        try:
            answers = await self.channel.send(self.client, rows, sender.name)
        except ServiceError as exc:
            answers = [Answer(error=exc) for _ in rows]
        self._outcomes.extend(outcomes.Outcome(row, sender, a.message_id, a.error, a.details)
                              for row, a in zip(rows, answers, strict=True))
        if len(self._outcomes) >= self._want:
            self._batch_done.set()

    # ------------------------------------------------------------------ control

    def _control(self) -> None:
        mono, now = time.monotonic(), self.clock()
        if self.stop_event.is_set() and self._stop_status is None:
            self._stop(RunStatus.PAUSED, "interrupted (Ctrl-C or SIGTERM)")
        # every CONTROL_EVERY_S of real time, or of simulated time under a simulated clock
        due_sim = self._next_control_sim is None or now >= self._next_control_sim
        if mono < self._next_control and not due_sim:
            return
        self._next_control = mono + CONTROL_EVERY_S
        self._next_control_sim = now + timedelta(seconds=CONTROL_EVERY_S)
        self.ledger.heartbeat(self.run_id)
        if self.gate is not None and self.gate.sync(self.pool, now,
                                                    day_start=self._day_start(now),
                                                    plan_limit=self.options.plan_limit):
            self._buffer.clear()  # rows read for senders no longer held, or too few
            self._last_seq = -1
            self._verify_at = self._earliest_verifying()  # a taken-over sender's rows
        sessions_live.follow_sessions(self.ledger, self.pool, now, self._note)
        request = self.ledger.control(self.run_id)
        if request == "pause":
            self._stop(RunStatus.PAUSED, "paused by the operator")
        elif request == "cancel":
            self._stop(RunStatus.CANCELLED, "cancelled by the operator")

    def _stop(self, status: str, reason: str) -> None:
        if self._stop_status is None:
            self._stop_status, self._stop_reason = status, reason
            self._note(self.clock(), reason)

    def _note(self, at: datetime, what: str, **facts: Any) -> None:
        self._record(TimelineEntry(at, what, **facts))

    def _record(self, entry: TimelineEntry) -> None:
        self.timeline.append(entry)
        if self.on_note is not None:
            self.on_note(entry)

    def _finish(self) -> RunResult:
        now = self.clock()
        if self._stop_status == RunStatus.CANCELLED:
            status = self.ledger.cancel_pending(self.run_id)
        elif self._stop_status is not None:
            status = self.ledger.end(self.run_id, RunStatus.PAUSED,
                                     reason=self._stop_reason or "paused")
        else:
            status = self.ledger.end(self.run_id, RunStatus.COMPLETED,
                                     reason="every delivery is settled")
            if status == RunStatus.COMPLETED:
                self._note(now, "run completed")
            else:  # another worker ended it first (a cancel it obeyed)
                self._stop_reason = self.ledger.get_run(self.run_id).stop_reason
        result = RunResult(self.run_id, status, self.ledger.counts(self.run_id),
                           self._stop_reason, self.timeline)
        if status == RunStatus.PAUSED and self._stop_reason and "API key" in self._stop_reason:
            raise RunStopped(f"run {self.run_id} paused: {self._stop_reason}")
        return result
