"""The ledger's one door and its clock: transactions, reads and a run by id.

:class:`~scheduler.ledger.runs.Ledger` is built on it in layers, one role each:
:class:`LedgerCore` (here), :class:`~scheduler.ledger.run_control.RunControl` (status,
control requests, the owner's lease, requeue) and ``Ledger`` (campaigns, runs, plans,
suppression).
"""

from __future__ import annotations

from scheduler.ledger import access
from scheduler.ledger.access import Engine, Scope
from scheduler.ledger.exceptions import RunNotFound
from scheduler.ledger.models import Run
from scheduler.timeutil import Clock, utcnow


class LedgerCore:
    """One engine and one clock; every operation goes through :meth:`transaction` or
    :meth:`read`."""

    def __init__(self, engine: Engine, clock: Clock = utcnow) -> None:
        self.engine = engine
        self.clock = clock

    # ------------------------------------------------------------------ the one door

    def transaction(self, what: str = "write to the ledger") -> Scope:
        """``with ledger.transaction("claim deliveries") as conn:`` one transaction for
        :mod:`scheduler.ledger.queries` functions; database errors become ``LedgerError``
        naming ``what`` (see :mod:`scheduler.ledger.access`)."""
        return Scope(self.engine, what, write=True)

    def read(self, what: str = "read the ledger") -> Scope:
        """``with ledger.read("count deliveries") as conn:`` reads, nothing committed."""
        return Scope(self.engine, what, write=False)

    def snapshot(self, what: str = "read the ledger") -> Scope:
        """Reads that all see the same state of the ledger (a report made mid-run)."""
        return Scope(self.engine, what, write=False, snapshot=True)

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
