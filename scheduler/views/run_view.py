"""A run as the dashboard and ``campaign status`` show it, read in ONE snapshot.

:func:`read_run_view` reads everything a run's page shows inside one
:func:`scheduler.ledger.access.snapshot`: the counts come from the per-run tallies the
database keeps (never a scan of the run's rows), the rest from indexed reads bounded by
a constant or by what the run did in the last minutes (see each part's docstring).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from scheduler.ledger import access
from scheduler.ledger.exceptions import RunNotFound
from scheduler.views.run_models import (
    CallFunnel,
    ErrorGroup,
    FunnelView,
    Progress,
    RecentEvent,
    RunInfo,
    RunView,
    SenderGlance,
    SenderPace,
    SmsFunnel,
    StepFunnel,
    Stuck,
    Wait,
    WorkerPace,
)

__all__ = [
    "CallFunnel",
    "ErrorGroup",
    "FunnelView",
    "Progress",
    "RecentEvent",
    "RunInfo",
    "RunView",
    "SenderGlance",
    "SenderPace",
    "SmsFunnel",
    "StepFunnel",
    "Stuck",
    "Wait",
    "WorkerPace",
    "read_run_view",
]

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings


def read_run_view(ledger: Ledger, run_id: int, *, settings: Settings,
                  now: datetime) -> RunView:
    """Run ``run_id`` as of ``now``, every part read in ONE snapshot of the ledger (a
    change committed meanwhile is in all of it or in none)."""
    from scheduler.ledger.run_reads import RunReads
    from scheduler.views.reading import read_run

    with access.snapshot(ledger.engine, f"read the view of run {run_id}") as conn:
        run = RunReads(conn).run(run_id)
        if run is None:
            raise RunNotFound(run_id)
        return read_run(conn, run, settings, now).view


