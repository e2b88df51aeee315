"""The ledger's engine and its clock, a run by id, and the runs' reads.

:class:`~scheduler.ledger.runs.Ledger` is built on it in layers, one role each:
:class:`LedgerCore` (here), :class:`~scheduler.ledger.run_control.RunControl` (status,
control requests, the owner's lease, requeue) and ``Ledger`` (campaigns, runs, plans,
suppression).

``LedgerCore`` alone is what the commands that only read (``status``, ``runs``,
``senders``) open (:func:`scheduler.wiring.open_reader`): it imports none of the writers
(issue 32).
"""

from __future__ import annotations

import json

from sqlmodel import col, select

from scheduler.core.timeutil import Clock, utcnow
from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.exceptions import RunNotFound
from scheduler.ledger.models import Run
from scheduler.ledger.states import FINISHED_RUN_STATUSES
from scheduler.settings.run import RunOptions, from_snapshot


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

    def list_runs(self, *, campaign_name: str | None = None) -> list[Run]:
        """Every run, newest first."""
        stmt = select(Run).order_by(col(Run.id).desc())
        if campaign_name:
            stmt = stmt.where(Run.campaign_name == campaign_name)
        with access.session(self.engine, "list the runs") as session:
            return list(session.exec(stmt).all())

    def unfinished_runs(self, *, campaign_name: str | None = None) -> list[Run]:
        """Runs that still have work: planned, running or paused, oldest first."""
        runs = [r for r in self.list_runs(campaign_name=campaign_name)
                if r.status not in FINISHED_RUN_STATUSES]
        return sorted(runs, key=lambda r: r.id or 0)

    def options(self, run: Run) -> RunOptions:
        """The run's options as planned; a run stored before options were (migration 0003)
        has them rebuilt from its definition snapshot."""
        if run.options is not None:
            return RunOptions.from_json(run.options, run_id=run.id)
        return from_snapshot(json.loads(run.definition or "{}"))

    def counts(self, run_id: int) -> dict[str, int]:
        """Deliveries of the run by state."""
        from scheduler.ledger.queries import dispatch as dq  # the engine's queries

        with access.read(self.engine, f"count the deliveries of run {run_id}") as conn:
            return dq.counts_by_state(conn, run_id)
