"""The ledger's engine and its clock, and a run by id.

:class:`~scheduler.ledger.runs.Ledger` is built on it in layers, one role each:
:class:`LedgerCore` (here), :class:`~scheduler.ledger.run_control.RunControl` (status,
control requests, the owner's lease, requeue) and ``Ledger`` (campaigns, runs, plans,
suppression).
"""

from __future__ import annotations

from scheduler.core.timeutil import Clock, utcnow
from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.exceptions import RunNotFound
from scheduler.ledger.models import Run


class LedgerCore:
    """One engine and one clock; every operation opens its transaction or read with
    :func:`scheduler.ledger.access.transaction` / :func:`~scheduler.ledger.access.read` /
    :func:`~scheduler.ledger.access.snapshot` on :attr:`engine`, the one door."""

    def __init__(self, engine: Engine, clock: Clock = utcnow) -> None:
        self.engine = engine
        self.clock = clock

    def close(self) -> None:
        """Close the ledger's pooled connections (the ledger can still be used after)."""
        self.engine.dispose()

    def get_run(self, run_id: int) -> Run:
        """The run with that id, or :class:`RunNotFound`."""
        with access.session(self.engine, f"read run {run_id}") as session:
            run = session.get(Run, run_id)
            if run is None:
                raise RunNotFound(run_id)
            return run
