"""Runs and campaigns in the ledger: create, store a plan, control, lease, finish.

A run is dispatched by at most one live process at a time: the owner writes its pid, host
and a heartbeat; another process may take the run over only when the owner's heartbeat is
stale or its pid is gone. Pause and cancel requests from other processes are written to
``runs.control`` and obeyed by the owner within its polling interval.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import threading
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session
from sqlmodel import select as model_select

from scheduler.ledger import queries
from scheduler.ledger.access import Scope
from scheduler.ledger.exceptions import LedgerError, RunLocked, RunNotFound, RunStateError
from scheduler.ledger.models import Campaign, Run, Suppression
from scheduler.ledger.states import FINISHED_RUN_STATUSES, DeliveryState, RunStatus
from scheduler.run_options import RunOptions, from_snapshot
from scheduler.timeutil import Clock, utcnow

#: A heartbeat older than this means the owner is gone.
LEASE_STALE_AFTER = timedelta(seconds=10)

runs_table = Run.__table__  # type: ignore[attr-defined]
_DONE, _ABORT = object(), object()


class _PlanWriter(threading.Thread):
    """Writes plan chunks in one transaction on its own thread; see ``Ledger.store_plan``."""

    def __init__(self, engine: Engine, run_id: int, start_at: datetime, *,
                 prepare: Callable[[Any], None] | None = None,
                 finalize: Callable[[Any], int | None] | None = None) -> None:
        super().__init__(name=f"plan-writer-{run_id}", daemon=True)
        self.engine, self.run_id, self.start_at = engine, run_id, start_at
        # prepare(conn) runs first, finalize(conn) last, in the same transaction; finalize
        # may return the run's planned count when it is not the number of rows written.
        self.prepare, self.finalize = prepare, finalize
        self.chunks: queue.Queue[Any] = queue.Queue(maxsize=2)
        self.queued = 0
        self.total = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.engine.begin() as conn:
                if conn.dialect.name == "sqlite":  # index pages of a big plan stay in memory
                    conn.exec_driver_sql("PRAGMA cache_size=-131072")
                if self.prepare is not None:
                    self.prepare(conn)
                while (chunk := self.chunks.get()) is not _DONE:
                    if chunk is _ABORT:
                        raise _Aborted
                    self._write(conn, chunk)
                planned = self.finalize(conn) if self.finalize is not None else None
                conn.execute(update(runs_table).where(runs_table.c.id == self.run_id)
                             .values(planned_count=self.total if planned is None else planned))
        except BaseException as exc:  # handed to the planning thread
            self.error = exc

    def _write(self, conn: Any, chunk: list[dict[str, Any]]) -> None:
        suppressed = queries.suppressed_numbers(
            conn, (r["to"] for r in chunk if r["state"] == DeliveryState.PLANNED))
        if suppressed:
            for r in chunk:
                if r["state"] == DeliveryState.PLANNED and r["to"] in suppressed:
                    r["state"], r["reason"] = DeliveryState.SKIPPED, "suppressed"
        self.total += queries.insert_deliveries(conn, self.run_id, chunk,
                                                first_seq=self.total, start_at=self.start_at)

    def put(self, item: Any) -> bool:
        """Hand a chunk over (waits while two are pending); False once the writer failed."""
        while self.is_alive():
            try:
                self.chunks.put(item, timeout=0.2)
            except queue.Full:
                continue
            if item is not _DONE and item is not _ABORT:
                self.queued += len(item)
            return True
        return False

    def abort(self) -> None:
        """The plan failed: roll everything back."""
        self.put(_ABORT)
        self.join()

    def finish(self) -> int:
        """Commit and return the number of rows stored, or raise the writer's error."""
        self.put(_DONE)
        self.join()
        if isinstance(self.error, SQLAlchemyError):
            raise LedgerError(f"could not store the plan of run {self.run_id}: "
                              f"{self.error}") from None
        if self.error is not None:
            raise self.error
        return self.total


class _Aborted(Exception):
    """The planning thread gave up; the writer rolls back."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
        with Session(self.engine) as session:
            campaign = session.exec(
                model_select(Campaign).where(Campaign.name == name)
            ).first()
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
            definition=json.dumps(definition, ensure_ascii=False, default=str),
            created_at=self.clock(), target=target, fingerprint=fingerprint,
            options=options.to_json(),
            # the planning process holds the run until its plan is stored (see
            # discard_interrupted_plans): nobody dispatches or discards a plan being written
            owner_pid=os.getpid(), owner_host=socket.gethostname(), heartbeat_at=self.clock(),
        )
        try:
            with Session(self.engine) as session:
                session.add(run)
                session.commit()
                assert run.id is not None
                return run.id
        except IntegrityError:
            raise RunStateError(
                f"campaign {campaign_name!r} already has a run for {fire_time}"
            ) from None

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

            def finalize(conn: Any) -> None:
                queries.skip_previous_recipients(conn, run_id, campaign, target)
        writer = _PlanWriter(self.engine, run_id, start_at, finalize=finalize)
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

        def prepare(conn: Any) -> None:
            queries.drop_replaceable_rows(conn, run_id)
            marks["last_old_id"] = queries.max_delivery_id(conn, run_id)

        def finalize(conn: Any) -> int:
            marks["dropped"] = queries.drop_already_handled(conn, run_id, marks["last_old_id"])
            queries.continue_after_handled(conn, run_id, marks["last_old_id"],
                                           list(options.step_delays_s), start_at)
            conn.execute(update(runs_table).where(runs_table.c.id == run_id).values(
                definition=json.dumps(definition, ensure_ascii=False, default=str),
                fingerprint=fingerprint, options=options.to_json()))
            return int(queries.count_rows(conn, run_id))

        self.acquire(run_id)  # nobody dispatches the run while its plan is replaced
        writer = _PlanWriter(self.engine, run_id, start_at, prepare=prepare, finalize=finalize)
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
        with self.engine.begin() as conn:
            conn.execute(update(runs_table).where(runs_table.c.id == run_id).values(
                definition=json.dumps(definition, ensure_ascii=False, default=str),
                fingerprint=fingerprint, options=options.to_json()))
            return queries.unpin_removed_senders(conn, run_id, list(options.senders))

    def _feed(self, writer: _PlanWriter, chunks: Iterable[list[dict[str, Any]]],
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
            if run.status != RunStatus.PLANNED or run.planned_count or self._planner_alive(run):
                continue
            assert run.id is not None
            with self.engine.begin() as conn:
                if queries.counts_by_state(conn, run.id):
                    continue
                conn.execute(runs_table.delete().where(runs_table.c.id == run.id))
            gone.append(run.id)
        return gone

    def get_run(self, run_id: int) -> Run:
        """The run with that id, or :class:`RunNotFound`."""
        with Session(self.engine, expire_on_commit=False) as session:
            run = session.get(Run, run_id)
            if run is None:
                raise RunNotFound(run_id)
            return run

    def list_runs(self, *, campaign_name: str | None = None) -> list[Run]:
        """Every run, newest first."""
        stmt = model_select(Run).order_by(Run.id.desc())  # type: ignore[union-attr]
        if campaign_name:
            stmt = stmt.where(Run.campaign_name == campaign_name)
        with Session(self.engine, expire_on_commit=False) as session:
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
        with self.engine.connect() as conn:
            return queries.counts_by_state(conn, run_id)

    # ------------------------------------------------------------------ status and control

    def set_status(self, run_id: int, status: str, *, reason: str | None = None) -> None:
        """Set the run's status (and its start or finish time)."""
        now = self.clock()
        values: dict[str, Any] = {"status": status}
        if reason is not None:
            values["stop_reason"] = reason
        if status == RunStatus.RUNNING:
            values["control"] = None
        if status in FINISHED_RUN_STATUSES:
            values["finished_at"] = now
        with self.engine.begin() as conn:
            if status == RunStatus.RUNNING:
                conn.execute(update(runs_table).where(runs_table.c.id == run_id,
                                                      runs_table.c.started_at.is_(None))
                             .values(started_at=now))
            conn.execute(update(runs_table).where(runs_table.c.id == run_id).values(**values))

    def request(self, run_id: int, action: str) -> Run:
        """Ask the run to ``pause``, ``resume`` or ``cancel``; survives restarts."""
        run = self.get_run(run_id)
        if run.status in FINISHED_RUN_STATUSES:
            raise RunStateError(f"run {run_id} is already {run.status}")
        now = self.clock()
        with self.engine.begin() as conn:
            if action == "pause":
                conn.execute(update(runs_table).where(runs_table.c.id == run_id)
                             .values(control="pause", status=RunStatus.PAUSED))
            elif action == "resume":
                conn.execute(update(runs_table).where(runs_table.c.id == run_id)
                             .values(control=None, status=RunStatus.RUNNING
                                     if self._owner_alive(run) else RunStatus.PAUSED))
            elif action == "cancel":
                conn.execute(update(runs_table).where(runs_table.c.id == run_id)
                             .values(control="cancel"))
                if not self._owner_alive(run):
                    self._cancel_now(conn, run_id, now)
            else:
                raise RunStateError(f"unknown action {action!r}")
        return self.get_run(run_id)

    def _cancel_now(self, conn: Any, run_id: int, now: datetime) -> None:
        queries.record_final(
            conn, [(i, "", "cancelled") for i in self._planned_ids(conn, run_id)],
            DeliveryState.SKIPPED, now, from_states=(DeliveryState.PLANNED,),
        )
        conn.execute(update(runs_table).where(runs_table.c.id == run_id)
                     .values(status=RunStatus.CANCELLED, finished_at=now, control=None,
                             stop_reason="cancelled by the operator"))

    def cancel_pending(self, run_id: int) -> None:
        """Owner side of a cancel: skip every planned row, mark the run cancelled."""
        with self.engine.begin() as conn:
            self._cancel_now(conn, run_id, self.clock())

    @staticmethod
    def _planned_ids(conn: Any, run_id: int) -> list[int]:
        d = queries.deliveries
        return list(conn.execute(select(d.c.id).where(
            d.c.run_id == run_id, d.c.state == DeliveryState.PLANNED)).scalars())

    def control(self, run_id: int) -> str | None:
        """The pending control request of the run (``pause``, ``cancel`` or None)."""
        with self.engine.connect() as conn:
            return conn.execute(select(runs_table.c.control)
                                .where(runs_table.c.id == run_id)).scalar()

    # ------------------------------------------------------------------ lease

    def _owner_alive(self, run: Run) -> bool:
        if run.owner_pid is None or run.heartbeat_at is None:
            return False
        if run.owner_host == socket.gethostname() and not _pid_alive(run.owner_pid):
            return False
        heartbeat = run.heartbeat_at
        return self.clock() - heartbeat < LEASE_STALE_AFTER or (
            run.owner_host == socket.gethostname() and run.owner_pid == os.getpid()
        )

    def _planner_alive(self, run: Run) -> bool:
        """Whether the process that created the run may still be storing its plan.

        A plan is stored in one long write transaction, during which the planner cannot
        write a heartbeat; on this host its pid tells, elsewhere the creation time does.
        """
        if run.owner_pid is None:
            return False
        if run.owner_host == socket.gethostname():
            return _pid_alive(run.owner_pid)
        return self.clock() - run.created_at < timedelta(hours=1)

    def acquire(self, run_id: int) -> Run:
        """Take the run for this process, or :class:`RunLocked` if a live process holds it."""
        run = self.get_run(run_id)
        if run.owner_pid not in (None, os.getpid()) and self._owner_alive(run):
            raise RunLocked(
                f"run {run_id} is being dispatched by process {run.owner_pid} on "
                f"{run.owner_host}; use `campaign pause|cancel {run_id}` to control it"
            )
        with self.engine.begin() as conn:
            conn.execute(update(runs_table).where(runs_table.c.id == run_id).values(
                owner_pid=os.getpid(), owner_host=socket.gethostname(),
                heartbeat_at=self.clock()))
        return self.get_run(run_id)

    def heartbeat(self, run_id: int) -> None:
        """Tell other processes the owner is alive."""
        with self.engine.begin() as conn:
            conn.execute(update(runs_table).where(runs_table.c.id == run_id,
                                                  runs_table.c.owner_pid == os.getpid())
                         .values(heartbeat_at=self.clock()))

    def release(self, run_id: int) -> None:
        """Give the run up (end of dispatch, pause, or Ctrl-C)."""
        with self.engine.begin() as conn:
            conn.execute(update(runs_table).where(runs_table.c.id == run_id,
                                                  runs_table.c.owner_pid == os.getpid())
                         .values(owner_pid=None, owner_host=None, heartbeat_at=None))

    def requeue(self, run_id: int, states: list[str], *, ids: list[int] | None = None) -> int:
        """Queue deliveries in ``states`` (failed, unknown; only ``ids`` when given) again,
        with their later steps.

        The run becomes ``paused`` so ``campaign resume`` sends them; suppressed numbers stay
        skipped.
        """
        run = self.get_run(run_id)
        if run.status == RunStatus.RUNNING and self._owner_alive(run):
            raise RunStateError(f"run {run_id} is being dispatched; pause it first")
        now = self.clock()
        with self.engine.begin() as conn:
            n = queries.requeue(conn, run_id, states, now, ids=ids)
            if n:
                conn.execute(update(runs_table).where(runs_table.c.id == run_id).values(
                    status=RunStatus.PAUSED, finished_at=None, control=None,
                    stop_reason=f"{n} deliveries queued again"))
        return n

    # ------------------------------------------------------------------ suppression

    def suppress(self, number: str, *, source: str, reason: str | None = None) -> bool:
        """Add ``number`` to the suppression list and skip its pending deliveries.

        Returns False when it was already there (idempotent).
        """
        now = self.clock()
        with self.engine.begin() as conn:
            exists = conn.execute(select(queries.suppressions.c.number).where(
                queries.suppressions.c.number == number)).first()
            if exists is None:
                conn.execute(queries.suppressions.insert().values(
                    number=number, source=source, reason=reason, created_at=now))
            queries.skip_pending_for_number(conn, number, "opted_out", now)
        return exists is None

    def suppressions(self) -> list[Suppression]:
        """The whole suppression list."""
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.exec(model_select(Suppression)).all())
