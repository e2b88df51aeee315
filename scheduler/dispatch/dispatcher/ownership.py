"""Who owns a run while it is dispatched: one process alone, or a ``serve`` worker's share.

A run dispatched by ``campaign run`` (or a single ``serve``) has one owner: it takes the
run's lease, settles what a crash left in doubt, reads every due row and claims with a
plain update. A ``campaign serve`` worker on PostgreSQL shares the run with other workers:
its sender leases decide which rows it reads and claims (fenced), and the rows dead workers
left in doubt are settled by the worker (see :mod:`scheduler.dispatch.leases`). The two
ways are two small classes behind :class:`Ownership`, not a flag threaded through the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from scheduler.dispatch import reconcile
from scheduler.dispatch.dispatcher.run_state import RunContext
from scheduler.dispatch.leases import LeaseGate, Seat
from scheduler.dispatch.senders import SenderPool
from scheduler.ledger.rows import DueDelivery


class Ownership(Protocol):
    """How a dispatcher owns its run (see the module)."""

    def take(self) -> None:
        """Take the run before anything else (nothing to give back when this fails)."""

    def start(self, now: datetime) -> dict[str, int]:
        """Mark the run running; settle what was left in doubt (counts by outcome)."""

    def due(self, now: datetime, *, limit: int, after_seq: int = -1) -> list[DueDelivery]:
        """Due rows this owner may send."""

    def claim_as(self) -> str | None:
        """The worker whose leases fence the claims (None: the run's sole owner)."""

    def sync(self, pool: SenderPool | None, now: datetime, *, day_start: datetime) -> bool:
        """Follow the senders this owner holds now; True when they changed."""

    def close(self) -> None:
        """The dispatch ended: give up the run or the worker's want of its senders."""


class SoleOwner:
    """The run's one owner: its lease, its start-up reconciliation, every due row."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def take(self) -> None:
        """Take the run's lease: a second process cannot dispatch it too."""
        self.ctx.stores.run.acquire()

    def start(self, now: datetime) -> dict[str, int]:
        """Mark the run running, settle the rows a crash left in doubt."""
        ctx = self.ctx
        ctx.stores.run.mark_running()
        options = ctx.options
        return reconcile.recover_after_crash(
            ctx.stores.queue, ctx.channel, now, match_events=ctx.stores.match_events,
            at_least_once=options.at_least_once,
            grace_s=options.engine.verify_grace_s if ctx.setup.events_received else 0.0,
            step_delays_s=options.step_delays_s)

    def due(self, now: datetime, *, limit: int, after_seq: int = -1) -> list[DueDelivery]:
        """Every due row of the run."""
        return self.ctx.stores.queue.due(now, limit=limit, after_seq=after_seq)

    def claim_as(self) -> str | None:
        """Claims need no fence."""
        return None

    def sync(self, pool: SenderPool | None, now: datetime, *, day_start: datetime) -> bool:
        """A sole owner holds every sender, always."""
        return False

    def close(self) -> None:
        """Give up the run's lease."""
        self.ctx.stores.run.release()


class WorkerShare:
    """A ``serve`` worker's share of a run: the rows of the senders it leases."""

    def __init__(self, ctx: RunContext, seat: Seat, senders: Sequence[str]) -> None:
        self.ctx = ctx
        self.gate = LeaseGate(seat, ctx.run_id, senders)

    def take(self) -> None:
        """A run has no single owner among workers: nothing to take."""

    def start(self, now: datetime) -> dict[str, int]:
        """Mark the run running (its control stays with whoever asked); settle the rows
        dead workers left in doubt (the worker does: its leases know whose they were)."""
        self.ctx.stores.run.mark_running(keep_control=True)
        self.gate.settle_orphans()
        return {}

    def due(self, now: datetime, *, limit: int, after_seq: int = -1) -> list[DueDelivery]:
        """Due rows of the senders held: this worker's part of the run first, then any."""
        store, gate = self.ctx.stores.queue, self.gate
        senders = gate.held if gate.held is not None else frozenset()
        rows = store.due(now, limit=limit, after_seq=after_seq, senders=senders,
                         part=gate.seat.part)
        if not rows and gate.seat.part[0] > 1:
            rows = store.due(now, limit=limit, after_seq=after_seq, senders=senders)
        return rows

    def claim_as(self) -> str | None:
        """Claims are fenced by this worker's leases."""
        return self.gate.worker_id

    def sync(self, pool: SenderPool | None, now: datetime, *, day_start: datetime) -> bool:
        """Give the pool the senders held now (see :meth:`LeaseGate.sync`)."""
        return self.gate.sync(pool, now, day_start=day_start,
                              plan_limit=self.ctx.options.plan_limit)

    def close(self) -> None:
        """The worker no longer wants the run's senders."""
        self.gate.close()


def ownership_for(ctx: RunContext) -> Ownership:
    """A worker's share when the run is dispatched by a leasing ``serve`` worker; else the
    sole owner."""
    seat = ctx.setup.seat
    if seat is not None and seat.usable() is not None:
        return WorkerShare(ctx, seat, ctx.options.senders)
    return SoleOwner(ctx)


__all__ = ["Ownership", "SoleOwner", "WorkerShare", "ownership_for"]
