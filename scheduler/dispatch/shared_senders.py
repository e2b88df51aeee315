"""One sender, several runs in one process: they pace it together.

``campaign serve`` dispatches every unfinished run at once, each with its own
:class:`~scheduler.dispatch.senders.SenderPool`. Two campaigns that name the same session
would otherwise each send through it at their own rate (two runs at ``30/min`` make it
``60/min``) and each count the daily cap from zero. :class:`SharedSenders` is the process's
record of every claim, by sender: before a pool picks a sender it takes in the claims the
other runs made through it since it last looked (the latest one spends a token of its
bucket and starts its jitter pause, as if it had made that send itself; all of them count
toward its daily cap), so each gap is at least the interval of the run that sends next:
the sender never goes faster than the fastest pace of the runs that use it (two runs at
``30/min`` make ``30/min``), and its day is counted once.

Across processes (several ``campaign serve`` workers on PostgreSQL) a sender is leased to
one worker at a time (:mod:`scheduler.dispatch.leases`), so this in-process record covers
every run that sends through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class _Claims:
    """One sender's claims: the latest one (its run and instant), how many in all, and how
    many by each run still being dispatched (a run's count goes when it stops, the total
    stays: a long ``serve`` of cron runs keeps one entry per sender)."""

    latest: datetime | None = None
    latest_run: int | None = None
    total: int = 0
    per_run: dict[int, int] = field(default_factory=dict)


class SharedSenders:
    """Every claim the process's dispatchers make, per sender (see the module's text)."""

    def __init__(self) -> None:
        self._senders: dict[str, _Claims] = {}
        self._runs: dict[int, int] = {}  # run → dispatchers of it in this process

    def join(self, run_id: int) -> None:
        """A dispatcher of ``run_id`` starts."""
        self._runs[run_id] = self._runs.get(run_id, 0) + 1

    def leave(self, run_id: int) -> None:
        """A dispatcher of ``run_id`` stopped."""
        left = self._runs.get(run_id, 0) - 1
        if left > 0:
            self._runs[run_id] = left
            return
        self._runs.pop(run_id, None)
        for claims in self._senders.values():
            claims.per_run.pop(run_id, None)

    @property
    def shared(self) -> bool:
        """Whether more than one run is being dispatched (else nothing to take in)."""
        return len(self._runs) > 1

    def note(self, run_id: int, sender: str, at: datetime) -> None:
        """``run_id`` claimed a send through ``sender`` scheduled at ``at``."""
        claims = self._senders.get(sender)
        if claims is None:
            claims = self._senders[sender] = _Claims()
        claims.total += 1
        claims.per_run[run_id] = claims.per_run.get(run_id, 0) + 1
        if claims.latest is None or at >= claims.latest:
            claims.latest, claims.latest_run = at, run_id

    def others(self, run_id: int, sender: str) -> tuple[datetime | None, int]:
        """The latest claim through ``sender`` if another run made it (else None), and how
        many claims the other runs made through it in all."""
        claims = self._senders.get(sender)
        if claims is None:
            return None, 0
        latest = claims.latest if claims.latest_run != run_id else None
        return latest, claims.total - claims.per_run.get(run_id, 0)
