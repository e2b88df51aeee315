"""This process as a ``campaign serve`` worker: its row, its heartbeat, its sender leases,
and whether it leads the triggers.

Every tick (a third of the lease time) the worker renews what it holds, gives up what it
marked for release at the previous tick (its dispatchers stopped claiming on those at
once, so their in-flight sends had a whole tick to finish), and takes free or expired
senders up to its fair share (:mod:`scheduler.dispatch.shares`). Before a sender taken
over becomes usable, the rows another worker left ``dispatching`` on it are settled
exactly as a restarted single process settles its own (events first, then ``unknown``
under at-most-once): a worker killed with ``kill -9`` loses nothing and sends nothing
twice. The trigger leader is whoever holds the ``@trigger`` lease.

On SQLite there are no leases: one worker sends through every sender, and a second one
is refused (:func:`WorkerSeat.register`).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence
from datetime import datetime, timedelta

from scheduler.core.timeutil import Clock
from scheduler.dispatch import reconcile, shares
from scheduler.dispatch.channels import channel_for
from scheduler.dispatch.exceptions import DispatchError
from scheduler.dispatch.leases import PreviousSends
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.store import StoresFor, WorkerStore
from scheduler.ledger.lease import worker_is_live  # one rule, which the views read too
from scheduler.ledger.rows import LeaseRow

#: Default lease time (seconds): a dead worker's senders move this long after its last renewal.
DEFAULT_LEASE_S = 15.0
#: A worker wakes this long after another worker's lease runs out (its acquire needs
#: ``expires_at <= now``), and never sooner than :data:`MIN_WAIT_S` after a tick.
EXPIRY_MARGIN_S = 0.02
MIN_WAIT_S = 0.01


class SecondWorkerRefused(DispatchError):
    """Another worker serves this SQLite ledger."""


class WorkerSeat:
    """Registry row, heartbeat, sender leases and trigger leadership of this worker."""

    def __init__(self, store: WorkerStore, stores_for: StoresFor, *,
                 lease_s: float = DEFAULT_LEASE_S, grace_s: float = 0.0,
                 clock: Clock | None = None, target: str | None = None) -> None:
        self.store = store
        #: Any run's stores (rows a dead worker left in doubt are settled through them).
        self.stores_for = stores_for
        #: Where this worker sends (``runs.target``'s form), recorded in its row.
        self.target = target
        self.clock = clock or store.clock
        self.lease = timedelta(seconds=lease_s)
        self.grace_s = grace_s
        self.id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"
        #: Leases on PostgreSQL; SQLite has one worker, which sends through every sender.
        self.leasing = store.leasing
        self.held: dict[str, LeaseRow] = {}
        self.draining: set[str] = set()
        #: Senders taken but not sent through yet: ``campaign serve`` is still pointing
        #: their webhooks at this worker's receiver (see ``Server.follow_leases``).
        self.unready: set[str] = set()
        self.leader = False
        self.part = (1, 0)
        self.takeovers: list[tuple[str, datetime, int]] = []
        #: The senders each run's dispatcher is ready to send through.
        self.wanted: dict[int, list[str]] = {}
        #: A dispatcher started or stopped since the last tick.
        self.dirty = False
        #: When the first lease another worker holds on a wanted sender runs out (as read
        #: at the last tick): the next tick comes then if that is sooner (``next_tick_s``).
        self.wake_at: datetime | None = None

    @property
    def tick_s(self) -> float:
        """How often :meth:`tick` should run (seconds)."""
        return self.lease.total_seconds() / 3

    def next_tick_s(self) -> float:
        """Seconds until the next :meth:`tick`: a third of the lease, or just after another
        worker's lease on a wanted sender runs out if that comes first, so a dead worker's
        senders are taken when their lease ends rather than up to a tick later."""
        wait = self.tick_s
        if self.wake_at is not None:
            until = (self.wake_at - self.clock()).total_seconds() + EXPIRY_MARGIN_S
            wait = min(wait, until)
        return max(wait, MIN_WAIT_S)

    def register(self) -> None:
        """Join the ledger's workers; on SQLite, refuse when another worker is live."""
        now = self.clock()
        other = self.store.register(
            self.id, socket.gethostname(), os.getpid(), now, self.target,
            alone_since=None if self.leasing else now - self.lease,
            is_live=lambda w: worker_is_live(w, now, self.lease))
        if other is not None:
            raise SecondWorkerRefused(
                f"another `campaign serve` (pid {other.pid} on {other.host}) already serves "
                "this SQLite ledger: SQLite has one writer, so it serves one worker. "
                "To run several workers, put the ledger on PostgreSQL "
                "(database_url = \"postgresql+psycopg://...\" in config.toml, or "
                "CAMPAIGN_DATABASE_URL)")

    def usable(self) -> frozenset[str] | None:
        """The senders this worker may claim on now (None: every sender, on SQLite)."""
        if not self.leasing:
            return None
        return frozenset(s for s in self.held if s not in self.draining
                         and s not in self.unready)

    def previous_sends(self, senders: frozenset[str], since: datetime
                       ) -> dict[str, PreviousSends]:
        """What every process sent through ``senders`` since ``since`` (the start of the
        day), in any run: how many, and the latest claim of each (its lease's, taken when
        this worker took it, and its rows' in the ledger)."""
        sends = self.store.day_sends(since, senders)
        out = {}
        for sender in senders:
            today, latest = sends.get(sender, (0, None))
            lease = self.held.get(sender)
            times = {t for t in (latest, lease.last_sent_at if lease else None) if t}
            out[sender] = PreviousSends(today, tuple(sorted(times)))
        return out

    def want(self, run_id: int, senders: Sequence[str]) -> None:
        """A dispatcher of ``run_id`` is ready to send through ``senders``."""
        self.wanted[run_id] = list(senders)
        self.dirty = True

    def unwant(self, run_id: int) -> None:
        """The dispatcher of ``run_id`` stopped."""
        self.wanted.pop(run_id, None)
        self.dirty = True

    def tick(self) -> None:
        """Heartbeat; renew, give up and take leases toward the fair share of the senders
        the dispatchers want; lead the triggers if nobody does."""
        self.dirty = False
        wanted = {s for senders in self.wanted.values() for s in senders}
        run_ids = sorted(self.wanted)
        now = self.clock()
        until = now + self.lease
        if not self.leasing:  # this worker sends through every sender
            self.store.beat(self.id, now, len(wanted))
            self.leader = True
            return
        renewed, all_leases, live = self.store.renew(self.id, now, until, len(wanted),
                                                     self.draining, now - self.lease)
        self.held = {s: lease for s, lease in self.held.items()
                     if s in renewed and s not in self.draining}
        self.leader = shares.TRIGGER_LEASE in renewed
        self.draining = set()
        leases = {row.sender: row for row in all_leases}
        self.part = shares.partition(self.id, live)
        if not self.leader and shares.is_free(leases.get(shares.TRIGGER_LEASE), now):
            self.leader = self.store.acquire(shares.TRIGGER_LEASE, self.id, now,
                                             until) is not None
        self.wake_at = shares.next_expiry(self.id, wanted, leases, now)
        plan = shares.plan_leases(self.id, wanted, leases, live, now)
        self.draining = set(plan.give_up)
        room = len(plan.take)
        for sender in [*plan.take, *plan.spare]:  # a race lost: the next free one
            if room <= 0:
                break
            room -= self._take(sender, run_ids, now, until)

    def _take(self, sender: str, run_ids: list[int], now: datetime, until: datetime) -> bool:
        """Take ``sender`` and settle the rows its previous holder left in doubt (they stay
        ``dispatching`` until proven or past their grace; the sender's other rows are not
        held up by them); False when another worker was faster."""
        taken = self.store.take_over(sender, self.id, now, until, run_ids)
        if taken is None:
            return False  # another worker was faster
        lease, left = taken
        settled = 0
        for run_id in sorted({r for r, _i in left}):
            ids = {i for r, i in left if r == run_id}
            settled += self._settle(run_id, ids, now)
        if settled:
            self.takeovers.append((sender, now, settled))
        self.held[sender] = lease
        return True

    def _settle(self, run_id: int, ids: set[int], now: datetime) -> int:
        """Settle rows another worker left in doubt, as a restarted process does."""
        channel, stored, started_at = self.store.run_for_settling(run_id)
        options = DispatchOptions.for_run(stored, start=started_at or now)
        stores = self.stores_for(run_id)
        counts = reconcile.recover_after_crash(
            stores.queue, channel_for(channel, options), now,
            match_events=stores.match_events,
            at_least_once=options.at_least_once, grace_s=self.grace_s,
            step_delays_s=options.step_delays_s, only=ids)
        return sum(counts.values())

    def settle_orphans(self, run_id: int) -> int:
        """When a dispatcher of ``run_id`` starts: settle the rows a dead worker (or a dead
        single process) left ``dispatching`` in this run, which a lease takeover missed
        because no live worker was dispatching the run then."""
        now = self.clock()
        ids = self.store.orphaned_rows(run_id, now, now - self.lease, self.id)
        return self._settle(run_id, ids, now) if ids else 0

    def stop(self) -> None:
        """Leave cleanly: no longer live, every lease given up (free for the others now)."""
        self.store.stop(self.id, self.clock())
        self.held.clear()
        self.leader = False
