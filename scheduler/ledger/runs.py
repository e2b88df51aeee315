"""Runs and campaigns in the ledger: create, store a plan, control, lease, finish.

A run is dispatched by at most one live process at a time (see :mod:`scheduler.ledger.lease`).
Pause and cancel requests from other processes are written to ``runs.control`` and obeyed by
the owner within its polling interval. Every method opens its own transaction through
:mod:`scheduler.ledger.access`, so a database error is one ``LedgerError`` line.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from scheduler.ledger import access
from scheduler.ledger.access import Connection, Engine, Scope
from scheduler.ledger.exceptions import RunLocked, RunNotFound, RunStateError
from scheduler.ledger.lease import owner_alive, planner_alive
from scheduler.ledger.models import Campaign, Run, Suppression
from scheduler.ledger.planwriter import PlanWriter
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import reruns
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.queries import suppression as sq
from scheduler.ledger.states import FINISHED_RUN_STATUSES, DeliveryState, RunStatus
from scheduler.run_options import RunOptions, from_snapshot
from scheduler.timeutil import Clock, utcnow


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class Ledger:
    """The ledger's operations on runs and campaigns, over one engine and one clock."""

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

    # ------------------------------------------------------------------ campaigns and runs

    def ensure_campaign(self, name: str, channel: str, definition_path: str) -> int:
        """The id of campaign ``name``, created or updated."""
        now = self.clock()
        with access.session(self.engine, f"record campaign {name}") as session:
            campaign = session.exec(select(Campaign).where(Campaign.name == name)).first()
            if campaign is None:
                campaign = Campaign(name=name, channel=channel, definition_path=definition_path,
                                    created_at=now, updated_at=now)
            else:
                campaign.channel, campaign.definition_path = channel, definition_path
                campaign.updated_at = now
            session.add(campaign)
            session.commit()
            assert campaign.id is not None
            return campaign.id

    def create_run(
        self, *, campaign_name: str, channel: str, definition_path: str,
        definition: dict[str, Any], delivery_mode: str, timezone: str,
        fire_time: datetime | None = None, target: str | None = None,
        fingerprint: str | None = None, options: RunOptions | None = None,
    ) -> int:
        """A new run in status ``planned``; unique per (campaign, fire time).

        ``options`` are the run's parsed options (``campaign.options.run_options``); a run
        made without them (a hand-built test run) gets those of its ``definition``.
        """
        if options is None:
            options = from_snapshot(definition)
        campaign_id = self.ensure_campaign(campaign_name, channel, definition_path)
        run = Run(
            campaign_id=campaign_id, campaign_name=campaign_name, channel=channel,
            status=RunStatus.PLANNED, delivery_mode=delivery_mode, timezone=timezone,
            fire_time=fire_time, definition_path=definition_path,
            definition=_json(definition),
            created_at=self.clock(), target=target, fingerprint=fingerprint,
            options=options.to_json(),
            # the planning process holds the run until its plan is stored (see
            # discard_interrupted_plans): nobody dispatches or discards a plan being written
            owner_pid=os.getpid(), owner_host=socket.gethostname(), heartbeat_at=self.clock(),
        )
        with access.session(self.engine, f"create a run of {campaign_name}") as session:
            session.add(run)
            try:
                session.commit()
            except IntegrityError:  # caught here, before the session translates it
                raise RunStateError(
                    f"campaign {campaign_name!r} already has a run for {fire_time}"
                ) from None
            assert run.id is not None
            return run.id

    def store_plan(
        self, run_id: int, chunks: Iterable[list[dict[str, Any]]], *, start_at: datetime,
        on_progress: Callable[[int], None] | None = None,
        skip_previous_of: tuple[str, str | None] | None = None,
    ) -> int:
        """Bulk-insert every chunk of a plan in ONE transaction (all or nothing).

        Numbers on the suppression list become ``skipped`` (reason ``suppressed``) here, so a
        number that opted out after the CSV was written is never sent anything. The writes
        happen in a writer thread while this one keeps planning: SQLite releases the GIL
        while it works, so rendering and storing overlap on two cores.

        ``skip_previous_of`` is (campaign, target): planned rows to numbers that received any
        step of the campaign's earlier runs to that target become ``skipped`` in the same
        transaction (a deliberate re-run).
        """
        finalize = None
        if skip_previous_of is not None:
            campaign, target = skip_previous_of

            def finalize(conn: Connection) -> None:
                reruns.skip_previous_recipients(conn, run_id, campaign, target)
        writer = PlanWriter(self.engine, run_id, start_at, finalize=finalize)
        return self._feed(writer, chunks, on_progress)

    def replan(
        self, run_id: int, chunks: Iterable[list[dict[str, Any]]], *, start_at: datetime,
        definition: dict[str, Any], fingerprint: str, options: RunOptions,
        on_progress: Callable[[int], None] | None = None,
    ) -> tuple[int, int]:
        """Replace what a run has not yet handed to the service with a new plan.

        In one transaction: rows still ``planned`` or ``skipped`` are deleted, the new plan
        is written, and any new row whose recipient and step the run already sent, tried or
        settled is dropped, so nothing is sent twice. Returns (rows written, rows dropped
        as already handled); the run's definition, options and fingerprint become the new
        ones.
        """
        marks: dict[str, int] = {}

        def prepare(conn: Connection) -> None:
            reruns.drop_replaceable_rows(conn, run_id)
            marks["last_old_id"] = reruns.max_delivery_id(conn, run_id)

        def finalize(conn: Connection) -> int:
            marks["dropped"] = reruns.drop_already_handled(conn, run_id, marks["last_old_id"])
            reruns.continue_after_handled(conn, run_id, marks["last_old_id"],
                                          list(options.step_delays_s), start_at)
            rq.update_run(conn, run_id, definition=_json(definition), fingerprint=fingerprint,
                          options=options.to_json())
            return int(reruns.count_rows(conn, run_id))

        self.acquire(run_id)  # nobody dispatches the run while its plan is replaced
        writer = PlanWriter(self.engine, run_id, start_at, prepare=prepare, finalize=finalize)
        try:
            written = self._feed(writer, chunks, on_progress)
        except BaseException:
            self.release(run_id)  # the old plan stands (the transaction rolled back)
            raise
        return written, marks.get("dropped", 0)

    def apply_definition(self, run_id: int, definition: dict[str, Any],
                         fingerprint: str, options: RunOptions) -> int:
        """Give an unfinished run a new definition and options for its pending rows (pacing
        changes).

        Pace, windows, schedule and senders are read from the options when the run is
        dispatched, so storing them applies them; pending rows pinned to a sender that is no
        longer listed are freed for the others. Returns how many rows were freed.
        """
        with self.transaction(f"apply the new definition to run {run_id}") as conn:
            rq.update_run(conn, run_id, definition=_json(definition), fingerprint=fingerprint,
                          options=options.to_json())
            return reruns.unpin_removed_senders(conn, run_id, list(options.senders))

    def _feed(self, writer: PlanWriter, chunks: Iterable[list[dict[str, Any]]],
              on_progress: Callable[[int], None] | None) -> int:
        run_id = writer.run_id
        writer.start()
        try:
            for chunk in chunks:
                if not writer.put(chunk):
                    break
                if on_progress is not None:
                    on_progress(writer.queued)
        except BaseException:
            writer.abort()
            raise
        total = writer.finish()
        self.release(run_id)  # the plan is stored: the planner's hold on the run ends
        if on_progress is not None:
            on_progress(total)
        return total

    def discard_interrupted_plans(self, *, campaign_name: str | None = None) -> list[int]:
        """Delete runs whose plan was never stored because the planner died.

        Such a run is ``planned`` with no deliveries and no live owner; it holds no rows, so
        deleting it loses nothing, and the campaign is simply planned again (a scheduled
        fire, whose (campaign, fire time) it would otherwise block, included).
        """
        gone: list[int] = []
        for run in self.list_runs(campaign_name=campaign_name):
            if (run.status != RunStatus.PLANNED or run.planned_count
                    or planner_alive(run, self.clock())):
                continue
            assert run.id is not None
            with self.transaction(f"discard the interrupted plan of run {run.id}") as conn:
                if dq.counts_by_state(conn, run.id):
                    continue
                rq.delete_run(conn, run.id)
            gone.append(run.id)
        return gone

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
        with self.read(f"count the deliveries of run {run_id}") as conn:
            return dq.counts_by_state(conn, run_id)

    # ------------------------------------------------------------------ status and control

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
        with self.transaction(f"set the status of run {run_id}") as conn:
            if status == RunStatus.RUNNING:
                rq.mark_started(conn, run_id, now)
            rq.update_run(conn, run_id, **values)

    def end(self, run_id: int, status: str, *, reason: str) -> str:
        """End a dispatch of the run as ``status`` (``completed`` or ``paused``) unless it
        has ended already, and return the status the run has now: on PostgreSQL another
        worker may have cancelled it (its planned rows skipped) a moment before this one
        found no work left."""
        values: dict[str, Any] = {"status": status, "stop_reason": reason}
        if status in FINISHED_RUN_STATUSES:
            values["finished_at"] = self.clock()
        with self.transaction(f"set the status of run {run_id}") as conn:
            if rq.update_unfinished_run(conn, run_id, FINISHED_RUN_STATUSES, **values):
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
        with self.transaction(f"{action} run {run_id}") as conn:
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
        return self.get_run(run_id)

    @staticmethod
    def _cancel_now(conn: Connection, run_id: int, now: datetime) -> None:
        dq.record_final(
            conn, [(i, "", "cancelled") for i in rq.planned_ids(conn, run_id)],
            DeliveryState.SKIPPED, now, from_states=(DeliveryState.PLANNED,),
        )
        rq.update_unfinished_run(conn, run_id, FINISHED_RUN_STATUSES,
                                 status=RunStatus.CANCELLED, finished_at=now, control=None,
                                 stop_reason="cancelled by the operator")

    def cancel_pending(self, run_id: int) -> str:
        """Owner side of a cancel: skip every planned row, mark the run cancelled (unless
        another worker ended it first); the status the run has now."""
        with self.transaction(f"cancel run {run_id}") as conn:
            self._cancel_now(conn, run_id, self.clock())
        return self.get_run(run_id).status

    def control(self, run_id: int) -> str | None:
        """The pending control request of the run (``pause``, ``cancel`` or None)."""
        with self.read(f"read the control request of run {run_id}") as conn:
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
        with self.transaction(f"take run {run_id}") as conn:
            rq.take_lease(conn, run_id, os.getpid(), socket.gethostname(), self.clock())
        return self.get_run(run_id)

    def heartbeat(self, run_id: int) -> None:
        """Tell other processes the owner is alive."""
        with self.transaction(f"write the heartbeat of run {run_id}") as conn:
            rq.beat(conn, run_id, os.getpid(), self.clock())

    def release(self, run_id: int) -> None:
        """Give the run up (end of dispatch, pause, or Ctrl-C)."""
        with self.transaction(f"release run {run_id}") as conn:
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
        with self.transaction(f"queue deliveries of run {run_id} again") as conn:
            n = reruns.requeue(conn, run_id, states, now, ids=ids)
            if n:
                rq.update_run(conn, run_id, status=RunStatus.PAUSED, finished_at=None,
                              control=None, stop_reason=f"{n} deliveries queued again")
        return n

    # ------------------------------------------------------------------ suppression

    def suppress(self, number: str, *, source: str, reason: str | None = None) -> bool:
        """Add ``number`` to the suppression list and skip its pending deliveries.

        Returns False when it was already there (idempotent).
        """
        with self.transaction("add a number to the suppression list") as conn:
            return sq.add_suppression(conn, number, source=source, reason=reason,
                                      now=self.clock())

    def suppressions(self) -> list[Suppression]:
        """The whole suppression list."""
        with access.session(self.engine, "read the suppression list") as session:
            return list(session.exec(select(Suppression)).all())
