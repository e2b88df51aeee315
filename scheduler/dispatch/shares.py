"""Fair shares of senders among live workers, and which leases a worker takes or gives up
(pure: the ledger supplies the leases and the live workers, the caller the time).

With ``n`` live workers and ``s`` senders wanted, a worker holds at most ``ceil(s / n)``
senders: it gives up the excess (the others then take it) and takes free or expired
leases up to its share. A worker that stopped released its leases (they are free at once);
one that died stops renewing them, and they are free once they expire. Each worker tries
the free senders in its own order (a hash of its id and the sender), so workers starting
together rarely race for the same lease; the race itself is settled by the conditional
acquire in :mod:`scheduler.ledger.queries.leases`.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from scheduler.ledger.rows import LeaseRow

#: The trigger leader's lease: a row of ``sender_leases`` that is no sender.
TRIGGER_LEASE = "@trigger"


def fair_share(senders: int, live_workers: int) -> int:
    """The most senders one worker holds while ``live_workers`` are live (itself too)."""
    if senders <= 0:
        return 0
    return math.ceil(senders / max(1, live_workers))


def is_free(lease: LeaseRow | None, now: datetime) -> bool:
    """Whether anybody may take this lease now (none yet, released, or expired)."""
    return lease is None or lease.worker is None or lease.expires_at <= now


def holds(lease: LeaseRow | None, worker_id: str, now: datetime) -> bool:
    """Whether ``worker_id`` holds this lease at ``now``."""
    return lease is not None and lease.worker == worker_id and lease.expires_at > now


@dataclass
class LeasePlan:
    """What a worker does with its leases at one tick."""

    take: list[str] = field(default_factory=list)
    give_up: list[str] = field(default_factory=list)
    share: int = 0
    #: The other free senders, in this worker's order: tried when a take loses its race
    #: (another worker took that one), so a tick still fills the share.
    spare: list[str] = field(default_factory=list)


def _order(worker_id: str, sender: str) -> int:
    return zlib.crc32(f"{worker_id}\0{sender}".encode())


def plan_leases(worker_id: str, wanted: Collection[str], leases: Mapping[str, LeaseRow],
                live: Collection[str], now: datetime) -> LeasePlan:
    """Which senders ``worker_id`` takes and gives up now.

    ``wanted``: the senders of the runs being dispatched; ``leases``: the lease rows by
    sender; ``live``: the ids of the live workers (this one counts whether listed or not).
    Senders held but no longer wanted are given up as well.
    """
    workers = set(live) | {worker_id}
    share = fair_share(len(wanted), len(workers))
    held = [s for s in wanted if holds(leases.get(s), worker_id, now)]
    plan = LeasePlan(share=share)
    plan.give_up = sorted(s for s, lease in leases.items()
                          if s not in wanted and s != TRIGGER_LEASE
                          and holds(lease, worker_id, now))
    if len(held) > share:
        # keep the ones this worker ranks first; the others go to the workers below share
        held.sort(key=lambda s: _order(worker_id, s))
        plan.give_up += sorted(held[share:])
        return plan
    free = sorted((s for s in wanted if s not in held and is_free(leases.get(s), now)),
                  key=lambda s: _order(worker_id, s))
    plan.take, plan.spare = free[:share - len(held)], free[share - len(held):]
    return plan


def next_expiry(worker_id: str, wanted: Collection[str], leases: Mapping[str, LeaseRow],
                now: datetime) -> datetime | None:
    """When the first lease that another worker holds on a wanted sender (or on the
    trigger) runs out, after ``now``; None when there is none. A worker wakes then rather
    than at its next tick: a dead worker's senders move as soon as they may."""
    ends = [lease.expires_at for sender, lease in leases.items()
            if (sender in wanted or sender == TRIGGER_LEASE)
            and lease.worker not in (None, worker_id) and lease.expires_at > now]
    return min(ends, default=None)


def partition(worker_id: str, live: Collection[str]) -> tuple[int, int]:
    """(number of live workers, this worker's slot among them): the part of a run's rows
    this worker reads first, so workers rarely reach for the same rows."""
    ids = sorted(set(live) | {worker_id})
    return len(ids), ids.index(worker_id)
