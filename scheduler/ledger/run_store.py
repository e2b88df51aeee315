"""One run's store: everything the dispatcher reads from and writes to the ledger.

:class:`RunStore` is the ledger's implementation of :class:`scheduler.dispatch.store.Store`
(the engine sees only that protocol). Each method is one transaction or one read through
:mod:`scheduler.ledger.access`, naming what it does, so a database error says what the
dispatcher was doing. What the wiring adds: ``on_accepted``, called in the transaction that
records accepted sends with their message ids (the tracking layer applies the events that
arrived before the ids were known; the engine never imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import date, datetime

from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.changes import AudienceCheck, Changes, InDoubt, ProofRule, Settle
from scheduler.ledger.queries import ambiguous as aq
from scheduler.ledger.queries import audience as aq_audience
from scheduler.ledger.queries import caps as capq
from scheduler.ledger.queries import claim_locks
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.queries import sender_calls as scq
from scheduler.ledger.queries import sender_health as shq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries import sessions as sq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.queries import voice_calls as cq
from scheduler.ledger.queries.sender_health import SenderSignals
from scheduler.ledger.recycling_store import RecyclingStore
from scheduler.ledger.rows import (
    ArmCount,
    DueDelivery,
    ExperimentProgress,
    ExperimentRow,
    ExperimentVerdict,
    SenderProfileRow,
    SessionStatusRow,
)
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from scheduler.ledger.states import RunStatus
from scheduler.settings.run import RunOptions

#: Called with the message ids just stored on accepted deliveries, in their transaction.
AcceptedHook = Callable[[Connection, Iterable[str | None], datetime], object]


def _nothing(_conn: Connection, _ids: Iterable[str | None], _now: datetime) -> None:
    return None


class RunStore(RecyclingStore):
    """The ledger as the store of run ``run_id`` (see the module; second chances in
    :class:`~scheduler.ledger.recycling_store.RecyclingStore`)."""

    def __init__(self, ledger: Ledger, run_id: int, *,
                 on_accepted: AcceptedHook = _nothing) -> None:
        self.ledger = ledger
        self.run_id = run_id
        self.on_accepted = on_accepted

    # ------------------------------------------------------------------ the run

    def options(self) -> RunOptions:
        """The run's stored options."""
        return self.ledger.options(self.ledger.get_run(self.run_id))

    def acquire(self) -> None:
        """Take the run's lease (its sole owner), so a second process cannot dispatch it."""
        self.ledger.acquire(self.run_id)

    def mark_running(self, *, keep_control: bool = False) -> None:
        """Mark the run ``running``; ``keep_control``: leave a pending pause or cancel for
        the worker that obeys it (a ``serve`` worker's share)."""
        self.ledger.set_status(self.run_id, RunStatus.RUNNING, keep_control=keep_control)

    def beat(self) -> str | None:
        """Renew the run's heartbeat; the operator's pending request (pause/cancel)."""
        self.ledger.heartbeat(self.run_id)
        return self.ledger.control(self.run_id)

    def release(self) -> None:
        """Give up the run's lease (a sole owner, at the end)."""
        self.ledger.release(self.run_id)

    def end(self, status: str, *, reason: str) -> str:
        """End the run with ``status`` (unless another process ended it); its status now."""
        return self.ledger.end(self.run_id, status, reason=reason)

    def cancel(self) -> str:
        """Cancel the run: its pending rows skipped; its status now."""
        return self.ledger.cancel_pending(self.run_id)

    def stop_reason(self) -> str | None:
        """Why the run stopped, as stored (another worker may have ended it)."""
        return self.ledger.get_run(self.run_id).stop_reason

    def counts(self) -> dict[str, int]:
        """The run's deliveries by state."""
        return self.ledger.counts(self.run_id)

    # ------------------------------------------------------------------ reads

    def due(self, now: datetime, *, limit: int, after_seq: int = -1,
            senders: Collection[str] | None = None,
            part: tuple[int, int] | None = None) -> list[DueDelivery]:
        """Planned rows whose time has come, in plan order, after ``after_seq`` (only rows
        free of a sender or pinned to one of ``senders``, and of ``part``, when given)."""
        with access.read(self.ledger.engine, "read due deliveries") as conn:
            return dq.due_deliveries(conn, self.run_id, now, limit=limit, after_seq=after_seq,
                                     senders=senders, part=part)

    def work_left(self) -> tuple[int, datetime | None]:
        """Rows still to send, and when the next one is due (None: none planned). Rows
        held for an A/B test's winner count as one: work is left, none of it due."""
        with access.read(self.ledger.engine, "look for work left") as conn:
            waiting = dq.pending_count(conn, self.run_id)
            if not waiting:
                return (1 if xq.has_held(conn, self.run_id) else 0), None
            return waiting, dq.next_due_time(conn, self.run_id)

    def sent_today(self, day_start: datetime) -> dict[str, int]:
        """Sends per sender since ``day_start``, across every run (daily caps)."""
        with access.read(self.ledger.engine, "count today's sends per sender") as conn:
            return dq.sent_today_by_sender(conn, day_start)

    def nth_send(self, sender: str, since: datetime, n: int) -> datetime | None:
        """When ``sender``'s ``n``-th send since ``since`` went out (a cap reached)."""
        with access.read(self.ledger.engine, "find when a sender reached its cap") as conn:
            return capq.nth_send_since(conn, sender, since, n)

    def calls_in_progress(self, since: datetime, channel: str) -> tuple[int, int]:
        """Calls in progress in this run, and in every running run of ``channel``."""
        with access.read(self.ledger.engine, "count calls in progress") as conn:
            return cq.calls_in_progress(conn, self.run_id, since, channel)

    def calls_under_way(self, senders: Sequence[str], since: datetime
                        ) -> dict[str, datetime]:
        """Senders with a call under way, and when it was claimed."""
        with access.read(self.ledger.engine, "read the calls under way per sender") as conn:
            return scq.calls_under_way(conn, self.run_id, senders, since)

    def session_statuses(self, senders: Sequence[str], since: datetime
                         ) -> dict[str, SessionStatusRow]:
        """The latest ``connection.status`` of each sender's session since ``since``."""
        with access.read(self.ledger.engine, "read the senders' session status") as conn:
            return sq.latest_statuses(conn, senders, since=since)

    def earliest_verifying(self) -> datetime | None:
        """When the first row being verified ends its grace (None: no row is)."""
        with access.read(self.ledger.engine, "read the rows being verified") as conn:
            return min((row.due_at for row in dq.dispatching_rows(conn, self.run_id)
                        if row.due_at is not None), default=None)

    # ------------------------------------------------------------------ writes

    def write(self, settled: Sequence[tuple[Changes, datetime]],
              claims: Sequence[tuple[int, str]] = (), now: datetime | None = None, *,
              worker: str | None = None,
              caps: Mapping[str, tuple[datetime, int]] | None = None,
              audience: AudienceCheck | None = None) -> set[int]:
        """Write settled outcomes and claim ``claims`` (row id, sender) in one transaction,
        committed before any of the claimed sends goes out; the ids that moved. A
        ``worker`` claims only the rows whose sender it still holds (fenced). ``caps``:
        sender → (since, most sends since then), counted here over every run and worker
        (warm-up caps), so claims beyond them are dropped. ``audience``: rows over the
        campaign's frequency caps or held as unengaged are skipped with their reason."""
        what = "record outcomes and claim deliveries" if claims else \
            "record the outcomes of sends"
        with access.transaction(self.ledger.engine, what) as conn:
            for changes, at in settled:
                self.apply(conn, changes, at)
            if not claims:
                return set()
            assert now is not None
            if audience is not None:
                claims = _audience(conn, claims, audience, now)
            if caps:
                claims = _within_caps(conn, claims, caps)
            if worker is None:
                return dq.claim(conn, claims, now)
            held = lq.fence(conn, worker, {s for _i, s in claims}, now)
            return lq.claim_skip_locked(conn, [(i, s) for i, s in claims if s in held],
                                        now, worker)

    def apply(self, conn: Connection, c: Changes, now: datetime) -> None:
        """Write one batch's changes in the caller's transaction (``write`` does, per
        batch; a test holds the transaction open around it)."""
        dq.record_accepted(conn, c.accepted, now)  # first: it takes the matching lock
        tq.record_details(conn, c.details)
        self.on_accepted(conn, (m for _i, m in c.accepted), now)
        dq.release_next_steps(conn, self.run_id, c.released, c.step_delays_s, now)
        dq.record_retry(conn, c.retries, now)
        dq.record_final(conn, c.failed, S.FAILED, now)
        dq.record_final(conn, c.unknown, S.UNKNOWN, now)
        dq.mark_verifying(conn, c.verifying, now)
        dq.skip_later_steps(conn, self.run_id, c.stopped, "previous step not sent", now)

    def defer(self, rows: Sequence[tuple[int, datetime]]) -> None:
        """Hold rows until their recipient's own window opens."""
        with access.transaction(self.ledger.engine, "defer deliveries to their window") as conn:
            dq.defer(conn, rows)

    def repair_waiting_steps(self, now: datetime) -> None:
        """Release later steps whose earlier step settled without releasing them."""
        with access.transaction(self.ledger.engine, "release waiting steps") as conn:
            dq.repair_waiting_steps(conn, self.run_id, now)

    # ------------------------------------------------------------------ the A/B test

    def experiment_progress(self) -> ExperimentProgress | None:
        """Where the run's undecided test stands (None: no test, or decided)."""
        with access.read(self.ledger.engine, "read the run's A/B test") as conn:
            row = xq.read(conn, self.run_id)
            if row is None or row.decided_at is not None:
                return None
            pending, held, last = xq.progress(conn, self.run_id)
            return ExperimentProgress(row, pending, held, last)

    def experiment_due(self, test_sent_at: datetime | None, decide_at: datetime) -> None:
        """Record when the test share's last send went out and when the test decides."""
        with access.transaction(self.ledger.engine, "record when the A/B test is due") as conn:
            xq.mark_due(conn, self.run_id, test_sent_at, decide_at)

    def decide_experiment(self, now: datetime, judge: Callable[
            [ExperimentRow, dict[str, ArmCount]], ExperimentVerdict]) -> ExperimentVerdict | None:
        """Decide the run's test once (the conditional UPDATE of ``claim_decision``): the
        arms' counts judged, the held rest planned with the winner, the decision stored,
        all in one transaction (a crash leaves it undecided); None: decided already."""
        with access.transaction(self.ledger.engine, "decide the A/B test") as conn:
            if not xq.claim_decision(conn, self.run_id, now):
                return None
            row = xq.read(conn, self.run_id)
            assert row is not None
            counts = xq.arm_counts(conn, self.run_id, int(row.settings.get("step", 0)),
                                   str(row.settings.get("metric", "reply")))
            verdict = judge(row, counts)
            _pending, _held, last = xq.progress(conn, self.run_id)
            xq.release_held(conn, self.run_id, verdict.goes, now)
            xq.store_decision(conn, self.run_id, winner=verdict.winner, goes=verdict.goes,
                              decision=verdict.decision, decide_at=now, test_sent_at=last)
            return verdict

    def expire(self, now: datetime) -> int:
        """Expire every row still pending (the latest send time passed); how many."""
        with access.transaction(self.ledger.engine, "expire the rows past the latest time") as conn:
            return (dq.expire_pending(conn, self.run_id, now)
                    + xq.expire_held(conn, self.run_id, now))

    def settle_in_doubt(self, now: datetime, proof: ProofRule,
                        decide: Callable[[InDoubt], Settle], *, grace_over: bool = False,
                        only: Collection[int] | None = None,
                        step_delays_s: tuple[float, ...] = (0.0,)) -> dict[str, int]:
        """Settle rows that may or may not have been sent, in one transaction: each row's
        proof is looked up (``proof``), ``decide`` says what becomes of it. ``grace_over``:
        the rows whose verification grace ended; else the rows a previous owner left
        (``only`` those ids when given). How many went each way."""
        what = "settle the rows being verified" if grace_over else \
            "settle the rows a crash left in doubt"
        counts = {"sent": 0, "unknown": 0, "requeued": 0, "verifying": 0}
        with access.transaction(self.ledger.engine, what) as conn:
            if grace_over:
                rows = aq.verifying_due(conn, self.run_id, now)
            else:
                rows = [row for row in dq.dispatching_rows(conn, self.run_id)
                        if row.due_at is None and (only is None or row.id in only)]
            released: list[tuple[str, int, str | None]] = []
            stopped: list[tuple[str, int]] = []
            for row in rows:
                since = row.dispatched_at - proof.skew if row.dispatched_at else None
                found = aq.sent_events_for(conn, row.to, row.sender if proof.names_session
                                           else None, since, names=sorted(proof.events))
                verdict = decide(InDoubt(row, found[0] if found else None))
                counts[verdict.kind] += 1
                self._settle_one(conn, verdict, now, released, stopped)
            dq.release_next_steps(conn, self.run_id, released, step_delays_s, now)
            dq.skip_later_steps(conn, self.run_id, stopped, "previous step not sent", now)
        return counts

    # ------------------------------------------------------------------ senders

    def sender_profiles(self, senders: Collection[str], now: datetime, *,
                        new_state: str) -> dict[str, SenderProfileRow]:
        """The profiles of ``senders``, each made first when missing (``new_state``)."""
        with access.transaction(self.ledger.engine, "read the senders' profiles") as conn:
            spq.ensure_profiles(conn, senders, now, state=new_state)
            return spq.profiles(conn, senders)

    def read_sender_profiles(self, senders: Collection[str]) -> dict[str, SenderProfileRow]:
        """The stored profiles of ``senders`` (a person or another worker may change them)."""
        with access.read(self.ledger.engine, "read the senders' profiles") as conn:
            return spq.profiles(conn, senders)

    def change_sender_state(self, sender: str, state: str, reason: str | None, now: datetime,
                            *, source: str, score: float | None = None,
                            throttle: float | None = None) -> bool:
        """Move a sender to ``state`` (kept in its history); True when it changed."""
        with access.transaction(self.ledger.engine, f"record sender {sender}'s state") as conn:
            return spq.change_state(conn, sender, state, reason, source, now, score=score,
                                    throttle=throttle)

    def advance_warm_day(self, sender: str, local_date: date, day: int) -> bool:
        """Set a sender's warm-up day for ``local_date`` (once per date)."""
        with access.transaction(self.ledger.engine, "advance a warm-up day") as conn:
            return spq.advance_warm_day(conn, sender, local_date, day)

    def sender_signals(self, senders: Collection[str], since: datetime,
                       undelivered_before: datetime) -> dict[str, SenderSignals]:
        """What the ledger knows of each sender's sends since ``since``."""
        with access.read(self.ledger.engine, "count the senders' signals") as conn:
            return shq.signals_since(conn, senders, since, undelivered_before)

    def last_sends(self, senders: Collection[str]) -> dict[str, datetime]:
        """Each sender's latest dispatch, any run."""
        with access.read(self.ledger.engine, "read the senders' latest sends") as conn:
            return shq.last_sends(conn, senders)

    def _settle_one(self, conn: Connection, v: Settle, now: datetime,
                    released: list[tuple[str, int, str | None]],
                    stopped: list[tuple[str, int]]) -> None:
        row = v.row
        if v.kind == "sent":
            assert v.proof is not None
            aq.mark_proven_sent(conn, row.id, v.proof.message_id_norm, v.proof.occurred_at,
                                now)
            # the events that came before the id was known: receipts, a call's outcome
            self.on_accepted(conn, [v.proof.message_id_norm], now)
            released.append((row.to, row.step, row.sender))
        elif v.kind == "verifying":
            assert v.until is not None
            dq.mark_verifying(conn, [(row.id, v.until, v.why)], now)
        elif v.kind == "requeued":
            dq.record_retry(conn, [(row.id, now, v.why)], now)
        else:
            dq.record_final(conn, [(row.id, "", v.why)], S.UNKNOWN, now)
            stopped.append((row.to, row.step))


def _audience(conn: Connection, claims: Sequence[tuple[int, str]], rules: AudienceCheck,
              now: datetime) -> list[tuple[int, str]]:
    """The claims the audience rules let through; the others are skipped with why."""
    held = aq_audience.held_back(
        conn, [(i, rules.recipients[i]) for i, _s in claims], now,
        max_per_day=rules.max_per_day, max_per_week=rules.max_per_week,
        hold_unengaged_after=rules.hold_unengaged_after, day_start=rules.day_start)
    if not held:
        return list(claims)
    aq_audience.skip_held_back(conn, held, now)
    return [(i, s) for i, s in claims if i not in held]


def _within_caps(conn: Connection, claims: Sequence[tuple[int, str]],
                 caps: Mapping[str, tuple[datetime, int]]) -> list[tuple[int, str]]:
    """The claims that keep each capped sender within its cap, counted in this transaction
    with the sender held (:func:`~scheduler.ledger.queries.claim_locks.hold_senders`)."""
    capped = {s for _i, s in claims if s in caps}
    if not capped:
        return list(claims)
    claim_locks.hold_senders(conn, capped)
    left: dict[str, int] = {}
    for sender in capped:
        since, cap = caps[sender]
        left[sender] = cap - spq.sends_since(conn, [sender], since).get(sender, 0)
    kept = []
    for row_id, sender in claims:
        if sender in left:
            if left[sender] <= 0:
                continue
            left[sender] -= 1
        kept.append((row_id, sender))
    return kept


__all__ = ["AcceptedHook", "RunStore"]
