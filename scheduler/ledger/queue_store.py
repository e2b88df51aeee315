"""One run's queue as a store: what is due, the claims, settled outcomes, rows in doubt.

:class:`QueueStore` is the ledger's implementation of
:class:`scheduler.dispatch.store.QueueStore` (the engine sees only that protocol). Each
method is one transaction or one read through :mod:`scheduler.ledger.access`, naming what
it does, so a database error says what the dispatcher was doing. It never applies
webhook events: the events that arrived before their send's message id was stored are
matched by tracking once the id is committed (the dispatcher asks, through the wiring's
``RunStores.match_events``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.changes import AudienceCheck, Changes, InDoubt, ProofRule, Settle
from scheduler.ledger.queries import ambiguous as aq
from scheduler.ledger.queries import audience as aq_audience
from scheduler.ledger.queries import caps as capq
from scheduler.ledger.queries import claim_locks
from scheduler.ledger.queries import conversation as cq
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.rows import DueDelivery
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S


class QueueStore:
    """The ledger as the queue of run ``run_id`` (see the module)."""

    def __init__(self, ledger: Ledger, run_id: int) -> None:
        self.ledger = ledger
        self.run_id = run_id

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
        held for an A/B test's winner count as one: work is left, none of it due.

        One snapshot: on PostgreSQL another worker may release the held rows (``held`` →
        ``planned``) between the count and the look for held rows; read apart, both would
        miss them and this worker would end the run with the winner's rows unsent."""
        with access.snapshot(self.ledger.engine, "look for work left") as conn:
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

    def earliest_verifying(self) -> datetime | None:
        """When the first row being verified ends its grace (None: no row is)."""
        with access.read(self.ledger.engine, "read the rows being verified") as conn:
            return min((row.due_at for row in dq.dispatching_rows(conn, self.run_id)
                        if row.due_at is not None), default=None)

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
        dq.release_next_steps(conn, self.run_id, c.released, c.step_delays_s, now)
        dq.record_retry(conn, c.retries, now)
        dq.record_final(conn, c.failed, S.FAILED, now)
        dq.record_final(conn, c.unknown, S.UNKNOWN, now)
        dq.mark_verifying(conn, c.verifying, now)
        cq.skip_later_steps(conn, self.run_id, c.stopped, "previous step not sent", now)

    def defer(self, rows: Sequence[tuple[int, datetime]]) -> None:
        """Hold rows until their recipient's own window opens."""
        with access.transaction(self.ledger.engine, "defer deliveries to their window") as conn:
            dq.defer(conn, rows)

    def repair_waiting_steps(self, now: datetime) -> None:
        """Release later steps whose earlier step settled without releasing them."""
        with access.transaction(self.ledger.engine, "release waiting steps") as conn:
            dq.repair_waiting_steps(conn, self.run_id, now)

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
            cq.skip_later_steps(conn, self.run_id, stopped, "previous step not sent", now)
        return counts

    def _settle_one(self, conn: Connection, v: Settle, now: datetime,
                    released: list[tuple[str, int, str | None]],
                    stopped: list[tuple[str, int]]) -> None:
        row = v.row
        if v.kind == "sent":
            assert v.proof is not None
            aq.mark_proven_sent(conn, row.id, v.proof.message_id_norm, v.proof.occurred_at,
                                now)
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


__all__ = ["QueueStore"]
