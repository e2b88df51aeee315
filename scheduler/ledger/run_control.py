"""A run's status, the control requests other processes send it (pause, resume, cancel),
the owner's lease on it, and queueing deliveries again.

A run is dispatched by at most one live process at a time (see :mod:`scheduler.ledger.lease`),
or by the live ``campaign serve`` workers on PostgreSQL. Pause and cancel requests from other
processes are written to ``runs.control`` and obeyed within the polling interval. Several
workers end one run: a final status is written only on an unfinished run.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Any

from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.core import LedgerCore
from scheduler.ledger.exceptions import RunLocked, RunStateError
from scheduler.ledger.lease import owner_alive
from scheduler.ledger.models import Run
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries import recycling as recq
from scheduler.ledger.queries import reruns
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.states import FINISHED_RUN_STATUSES, DeliveryState, RunStatus


class RunControl(LedgerCore):
    """Status, control, lease and requeue of runs (see the module's text)."""

    def set_status(self, run_id: int, status: str, *, reason: str | None = None,
                   keep_control: bool = False) -> None:
        """Set the run's status (and its start or finish time); ``running`` clears a
        pending control request unless ``keep_control`` (a worker joining a run that
        others dispatch must not undo a pause or cancel meant for all of them)."""
        now = self.clock()
        values: dict[str, Any] = {"status": status}
        if reason is not None:
            values["stop_reason"] = reason
        if status == RunStatus.RUNNING and not keep_control:
            values["control"] = None
        if status in FINISHED_RUN_STATUSES:
            values["finished_at"] = now
        from scheduler.ledger import outbox  # the webhook events: when a run moves

        with access.transaction(self.engine, f"set the status of run {run_id}") as conn:
            before = outbox.run_before(conn, run_id)  # its webhook event, if it moves
            if status == RunStatus.RUNNING:
                rq.mark_started(conn, run_id, now)
            rq.update_run(conn, run_id, **values)
            outbox.run_changed(conn, before, now)

    def end(self, run_id: int, status: str, *, reason: str) -> str:
        """End a dispatch of the run as ``status`` (``completed`` or ``paused``) unless it
        has ended already, and return the status the run has now: on PostgreSQL another
        worker may have cancelled it (its planned rows skipped) a moment before this one
        found no work left."""
        values: dict[str, Any] = {"status": status, "stop_reason": reason}
        if status in FINISHED_RUN_STATUSES:
            values["finished_at"] = self.clock()
        from scheduler.ledger import outbox  # the webhook events: when a run moves

        with access.transaction(self.engine, f"set the status of run {run_id}") as conn:
            before = outbox.run_before(conn, run_id)
            if rq.update_unfinished_run(conn, run_id, FINISHED_RUN_STATUSES, **values):
                outbox.run_changed(conn, before, self.clock())
                return status
        return self.get_run(run_id).status

    def request(self, run_id: int, action: str, *, served: bool = False) -> Run:
        """Ask the run to ``pause``, ``resume`` or ``cancel``; survives restarts.

        ``served``: live ``campaign serve`` workers dispatch it (PostgreSQL), as an owner.
        """
        run = self.get_run(run_id)
        if run.status in FINISHED_RUN_STATUSES:
            raise RunStateError(f"run {run_id} is already {run.status}")
        now = self.clock()
        alive = owner_alive(run, now) or served
        from scheduler.ledger import outbox  # the webhook events: when a run moves

        with access.transaction(self.engine, f"{action} run {run_id}") as conn:
            before = outbox.run_before(conn, run_id)
            if action == "pause":
                rq.update_run(conn, run_id, control="pause", status=RunStatus.PAUSED)
            elif action == "resume":
                rq.update_run(conn, run_id, control=None,
                              status=RunStatus.RUNNING if alive else RunStatus.PAUSED)
            elif action == "cancel":
                rq.update_run(conn, run_id, control="cancel")
                if not alive:
                    self._cancel_now(conn, run_id, now)
            else:
                raise RunStateError(f"unknown action {action!r}")
            if action != "cancel":  # _cancel_now writes run.cancelled itself
                outbox.run_changed(conn, before, now)
        return self.get_run(run_id)

    @staticmethod
    def _cancel_now(conn: Connection, run_id: int, now: datetime) -> None:
        dq.record_final(
            conn, [(i, "", "cancelled") for i in rq.planned_ids(conn, run_id)],
            DeliveryState.SKIPPED, now, from_states=(DeliveryState.PLANNED,),
        )
        xq.skip_held(conn, run_id, "cancelled", now)  # the rest an A/B test held back
        from scheduler.ledger import outbox  # the webhook events: when a run moves

        before = outbox.run_before(conn, run_id)  # the rows first, as before: lock order
        rq.update_unfinished_run(conn, run_id, FINISHED_RUN_STATUSES,
                                 status=RunStatus.CANCELLED, finished_at=now, control=None,
                                 stop_reason="cancelled by the operator")
        outbox.run_changed(conn, before, now)
        child = recq.child_of(conn, run_id)
        if child is not None:  # a fallback run goes with its parent
            RunControl._cancel_now(conn, child, now)

    def cancel_pending(self, run_id: int) -> str:
        """Owner side of a cancel: skip every planned row, mark the run cancelled (unless
        another worker ended it first); the status the run has now."""
        with access.transaction(self.engine, f"cancel run {run_id}") as conn:
            self._cancel_now(conn, run_id, self.clock())
        return self.get_run(run_id).status

    def control(self, run_id: int) -> str | None:
        """The pending control request of the run (``pause``, ``cancel`` or None)."""
        with access.read(self.engine, f"read the control request of run {run_id}") as conn:
            return rq.control_of(conn, run_id)

    # ------------------------------------------------------------------ lease

    def acquire(self, run_id: int) -> Run:
        """Take the run for this process, or :class:`RunLocked` if a live process holds it."""
        run = self.get_run(run_id)
        if run.owner_pid not in (None, os.getpid()) and owner_alive(run, self.clock()):
            raise RunLocked(
                f"run {run_id} is being dispatched by process {run.owner_pid} on "
                f"{run.owner_host}; use `campaign pause|cancel {run_id}` to control it"
            )
        with access.transaction(self.engine, f"take run {run_id}") as conn:
            rq.take_lease(conn, run_id, os.getpid(), socket.gethostname(), self.clock())
        return self.get_run(run_id)

    def heartbeat(self, run_id: int) -> None:
        """Tell other processes the owner is alive."""
        with access.transaction(self.engine, f"write the heartbeat of run {run_id}") as conn:
            rq.beat(conn, run_id, os.getpid(), self.clock())

    def release(self, run_id: int) -> None:
        """Give the run up (end of dispatch, pause, or Ctrl-C)."""
        with access.transaction(self.engine, f"release run {run_id}") as conn:
            rq.drop_lease(conn, run_id, os.getpid())

    def requeue(self, run_id: int, states: list[str], *, ids: list[int] | None = None) -> int:
        """Queue deliveries in ``states`` (failed, unknown; only ``ids`` when given) again,
        with their later steps.

        The run becomes ``paused`` so ``campaign resume`` sends them; suppressed numbers stay
        skipped.
        """
        run = self.get_run(run_id)
        if run.status == RunStatus.RUNNING and owner_alive(run, self.clock()):
            raise RunStateError(f"run {run_id} is being dispatched; pause it first")
        now = self.clock()
        from scheduler.ledger import outbox  # the webhook events: when a run moves

        with access.transaction(self.engine, f"queue deliveries of run {run_id} again") as conn:
            n = reruns.requeue(conn, run_id, states, now, ids=ids)
            before = outbox.run_before(conn, run_id)
            if n:
                rq.update_run(conn, run_id, status=RunStatus.PAUSED, finished_at=None,
                              control=None, stop_reason=f"{n} deliveries queued again")
                outbox.run_changed(conn, before, now)
        return n
