"""Runs that nobody will send: unfinished, held by no live process, and with no live
``campaign serve`` worker that may serve them.

A worker leaves alone a run started against another target than its own (``runs.target``
against the ``workers.target`` it registered with, see :mod:`scheduler.usecases.serve`). When
the worker that did serve a run dies, the run stays ``running`` with its rows ``planned``
and nothing moves. ``campaign status``, ``runs`` and ``workers`` say so, why, and what to
do: :func:`judge_serving` decides (pure), :func:`unserved_runs` reads the ledger for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.core.lazy_model import LazyModel
from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.lease import owner_alive, planner_alive, worker_is_live
from scheduler.ledger.models import Run
from scheduler.ledger.states import SANDBOX_TARGET, RunStatus, describe_target
from scheduler.ledger.worker_reads import WorkerReads

if TYPE_CHECKING:  # the reads only (issue 32: the writers stay unloaded)
    from scheduler.ledger.core import LedgerCore

#: Statuses in which a run waits for a process to send it (paused waits for the operator).
WAITING_FOR_A_SENDER = (RunStatus.PLANNED, RunStatus.RUNNING)


class ServingWorker(LazyModel):
    """A live worker and where it sends (``runs.target``'s form; None: not recorded)."""

    id: str
    target: str | None = None


class Unserved(LazyModel):
    """A run that no live process will send, why, and what to do."""

    run: int
    campaign: str
    status: str
    #: The run's ``runs.target``.
    target: str | None
    #: The live workers, each of which leaves the run alone (empty: none is live).
    workers: list[ServingWorker]
    reason: str
    advice: str

    def lines(self) -> list[str]:
        """The problem and the remedy, for text output."""
        return [self.reason, f"to continue it: {self.advice}"]


def _where(target: str | None) -> str:
    """A target in words, short (the embedded sandbox is not spelled out twice)."""
    return "the embedded sandbox" if target == SANDBOX_TARGET else describe_target(target)


def _serve_for(target: str | None) -> str:
    """How to start a worker that sends where ``target`` says."""
    if target == SANDBOX_TARGET:
        return "start `campaign serve` with no base_url (the embedded sandbox)"
    return f"start `campaign serve` with base_url pointing at {_where(target)}"


def _workers_phrase(workers: Sequence[ServingWorker]) -> str:
    """``workers w1, w2 send to X and leave it alone`` (grouped by where they send)."""
    groups: dict[str | None, list[str]] = {}
    for w in workers:
        groups.setdefault(w.target, []).append(w.id)
    parts = [(f"workers {', '.join(ids)} send" if len(ids) > 1 else f"worker {ids[0]} sends")
             + f" to {_where(target)}" for target, ids in groups.items()]
    if len(parts) == 1:
        return parts[0] + (" and leave it alone" if len(workers) > 1 else " and leaves it alone")
    return "; ".join(parts) + ": each leaves it alone"


def judge_serving(run: Run, *, held: bool,
                  workers: Sequence[ServingWorker]) -> Unserved | None:
    """Whether some live process will send ``run``; if none will, why and what to do.

    ``held``: a live process holds the run (a foreground ``campaign run`` or ``resume``, or
    the planner still storing it). ``workers``: the live ``campaign serve`` workers. A
    worker may serve the run when it sends to the run's target (a worker or a run whose
    target is not recorded may serve any). Only a planned (stored) or running run waits for
    a sender; a paused or finished one is nobody's to send.
    """
    if run.status not in WAITING_FOR_A_SENDER or held:
        return None
    if run.status == RunStatus.PLANNED and not run.planned_count:
        return None  # its plan is still being stored (or is discarded when its planner died)
    if any(w.target is None or run.target is None or w.target == run.target
           for w in workers):
        return None
    run_id = run.id or 0
    head = f"run {run_id} ({run.campaign_name}) is sent by no live worker"
    cancel = f"or stop it with `campaign cancel {run_id}`"
    if not workers:
        reason = (f"{head}: it is {run.status}, but no `campaign serve` is live and no "
                  "`campaign run` holds it")
        advice = (f"start `campaign serve` or `campaign resume {run_id}` (sending to "
                  f"{_where(run.target)}), {cancel}")
    else:
        reason = (f"{head}: it was started against {_where(run.target)}; "
                  f"{_workers_phrase(workers)}")
        advice = f"{_serve_for(run.target)}, {cancel}"
    return Unserved(run=run_id, campaign=run.campaign_name, status=run.status,
                    target=run.target, workers=list(workers), reason=reason, advice=advice)


def held_by_a_process(run: Run, now: datetime) -> bool:
    """Whether a live process holds the run: its owner, or (planned) its planner."""
    return owner_alive(run, now) or (run.status == RunStatus.PLANNED
                                     and planner_alive(run, now))


def live_serving_workers(ledger: LedgerCore, lease_s: float, now: datetime) -> list[ServingWorker]:
    """The live workers of the ledger and where each sends."""
    with access.read(ledger.engine, "read the live workers and their targets") as conn:
        return read_serving_workers(conn, lease_s, now)


def read_serving_workers(conn: Connection, lease_s: float,
                         now: datetime) -> list[ServingWorker]:
    """:func:`live_serving_workers` read on ``conn`` (a caller's snapshot)."""
    lease = timedelta(seconds=lease_s)
    rows = WorkerReads(conn).live(now - lease)
    return [ServingWorker(id=w.id, target=w.target) for w in rows
            if worker_is_live(w, now, lease)]


def unserved_runs(ledger: LedgerCore, lease_s: float, now: datetime,
                  runs: Iterable[Run] | None = None) -> dict[int, Unserved]:
    """The runs among ``runs`` (default: every unfinished one) that no live process will
    send, by id; the workers are read once, and only when some run waits for a sender."""
    waiting = [r for r in (ledger.unfinished_runs() if runs is None else runs)
               if r.status in WAITING_FOR_A_SENDER]
    if not waiting:
        return {}
    workers = live_serving_workers(ledger, lease_s, now)
    found = {}
    for run in waiting:
        verdict = judge_serving(run, held=held_by_a_process(run, now), workers=workers)
        if verdict is not None:
            found[verdict.run] = verdict
    return found
