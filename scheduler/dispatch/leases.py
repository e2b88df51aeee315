"""A dispatcher inside a ``campaign serve`` worker: it sends only through the senders the
worker holds (:mod:`scheduler.dispatch.workers`).

Three ways it changes the dispatcher's loop:

- :meth:`LeaseGate.sync` (every control poll, half a second): the pool's senders become the
  ones held now; a sender just taken over paces on from its latest sends by whichever
  process made them (``sender_leases.last_sent_at`` and the latest dispatch time of its
  rows in the ledger: :meth:`~scheduler.dispatch.pacing.SenderPace.resume_from`), so it
  never sends faster than its rate while it moves, and with today's sends through it
  recounted from the ledger, so its daily cap and plan limit count what its other holders
  sent; the dispatcher forgets its buffered rows when the set changed;
- the rows it reads (:meth:`~scheduler.dispatch.dispatcher.ownership.WorkerShare.due`):
  free of a sender or pinned to a held one, this worker's part of the run first
  (``seq % workers``), then any;
- its claims (the store's ``write`` with ``worker``): in the claim's transaction, the
  fence (the senders still held, their lease rows locked until commit), then
  ``FOR UPDATE SKIP LOCKED`` with this worker's id on every row.

A run has no single owner here: every worker dispatches every run, each through its own
senders.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from scheduler.dispatch.senders import SenderPool


class PreviousSends(NamedTuple):
    """A sender's sends by its previous holders, for the worker that takes it: how many
    today, and the latest ones' times (its lease's latest claim, its rows' latest
    dispatch)."""

    today: int
    latest: tuple[datetime, ...]


class Seat(Protocol):
    """What a dispatcher needs of its worker (:class:`~scheduler.dispatch.workers.WorkerSeat`)."""

    id: str
    part: tuple[int, int]

    def usable(self) -> frozenset[str] | None:
        """The senders the worker may claim on now (None: all)."""

    def want(self, run_id: int, senders: Sequence[str]) -> None:
        """A dispatcher of ``run_id`` is ready to send through ``senders``."""

    def previous_sends(self, senders: frozenset[str], since: datetime
                       ) -> dict[str, PreviousSends]:
        """What every process sent through ``senders`` since ``since``, in any run."""

    def unwant(self, run_id: int) -> None:
        """The dispatcher of ``run_id`` stopped."""

    def settle_orphans(self, run_id: int) -> int:
        """Settle the rows dead workers left in doubt in ``run_id``; how many."""


class LeaseGate:
    """One dispatcher's view of its worker's leases."""

    def __init__(self, seat: Seat, run_id: int, senders: Sequence[str]) -> None:
        self.seat = seat
        self.worker_id = seat.id
        self.run_id = run_id
        #: The senders this worker holds now (None: not synced yet).
        self.held: frozenset[str] | None = None
        # only now, with its quotas read and its pool about to be made, does the worker
        # want the run's senders: a sender is never held by a worker not ready to send
        seat.want(run_id, senders)

    def settle_orphans(self) -> int:
        """At the dispatcher's start: rows dead workers left ``dispatching`` in this run."""
        return self.seat.settle_orphans(self.run_id)

    def close(self) -> None:
        """The dispatcher stopped: the worker no longer wants its senders for this run."""
        self.seat.unwant(self.run_id)

    def sync(self, pool: SenderPool | None, now: datetime, *, day_start: datetime,
             plan_limit: int | None = None) -> bool:
        """Give the pool the senders held now; True when they changed. The senders just
        taken get today's sends (since ``day_start``) from the ledger: others may have sent
        through them since the pool was made."""
        held = self.seat.usable()
        if pool is None or held == self.held:
            return False
        taken = frozenset(held or ()) - (self.held or frozenset())
        if taken:
            previous = self.seat.previous_sends(taken, day_start)
            pool.recount_today({s: p.today for s, p in previous.items()}, now,
                               plan_limit=plan_limit)
            for name, sends in previous.items():
                pool.resume(name, sends.latest)  # on from its previous holder's pace
        self.held = pool.held = held
        return True
