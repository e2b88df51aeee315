"""Runs and campaigns in the ledger: create, store a plan, list, count, suppress.

Built on :class:`~scheduler.ledger.run_control.RunControl` (status, control requests, the
owner's lease, requeue) and :class:`~scheduler.ledger.core.LedgerCore` (the one door). Every
method opens its own transaction through :mod:`scheduler.ledger.access`, so a database error
is one ``LedgerError`` line.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.lease import planner_alive
from scheduler.ledger.models import Campaign, Run, Suppression
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries import links as lq
from scheduler.ledger.queries import recycling as recq
from scheduler.ledger.queries import reruns
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.queries import schedules as sch
from scheduler.ledger.queries import suppression as sq
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.rows import ExperimentPlan, ScheduleRow, UnknownRow, UptimeInterval
from scheduler.ledger.run_control import RunControl
from scheduler.ledger.states import RunStatus
from scheduler.settings.run import RunOptions, from_snapshot

# The plan writer (its thread, the name tables) is imported by the methods that store a plan:
# the commands that only read the ledger (status, runs, senders) open it too (issue 32).
if TYPE_CHECKING:
    from scheduler.ledger.planwriter import PlanWriter


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class Ledger(RunControl):
    """The ledger's operations on runs and campaigns, over one engine and one clock."""

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

    def create_fallback_run(self, parent_id: int, channel: str, options_json: str) -> int:
        """The fallback run of run ``parent_id`` (issue 25): same campaign, definition and
        target, ``channel`` and its options (``RunOptions`` JSON); planned with no rows
        (the parent's recycling adds them), no fire time, held by nobody. Made once: a
        second call, from this or another process, returns the same run."""
        existing = self.fallback_run_of(parent_id)
        if existing is not None:
            return existing
        parent = self.get_run(parent_id)
        run = Run(
            campaign_id=parent.campaign_id, campaign_name=parent.campaign_name,
            channel=channel, status=RunStatus.PLANNED, delivery_mode=parent.delivery_mode,
            timezone=parent.timezone, definition_path=parent.definition_path,
            definition=parent.definition, created_at=self.clock(), target=parent.target,
            options=options_json, parent_run_id=parent_id,
        )
        with access.session(self.engine, f"create the fallback run of run {parent_id}"
                            ) as session:
            session.add(run)
            try:
                session.commit()
            except IntegrityError:  # ux_runs_parent: another process made it first
                session.rollback()
                made = self.fallback_run_of(parent_id)
                assert made is not None
                return made
            assert run.id is not None
            return run.id

    def fallback_run_of(self, run_id: int) -> int | None:
        """The fallback run of run ``run_id``, if it has one."""
        with access.read(self.engine, f"find the fallback run of run {run_id}") as conn:
            return recq.child_of(conn, run_id)

    def store_plan(
        self, run_id: int, chunks: Iterable[list[dict[str, Any]]], *, start_at: datetime,
        on_progress: Callable[[int], None] | None = None,
        skip_previous_of: tuple[str, str | None] | None = None,
        links: Mapping[tuple[int, str], int] | None = None,
        experiment: ExperimentPlan | None = None,
    ) -> int:
        """Bulk-insert every chunk of a plan in ONE transaction (all or nothing).

        Numbers on the suppression list become ``skipped`` (reason ``suppressed``) here, so a
        number that opted out after the CSV was written is never sent anything. The writes
        happen in a writer thread while this one keeps planning: SQLite releases the GIL
        while it works, so rendering and storing overlap on two cores.

        ``skip_previous_of`` is (campaign, target): planned rows to numbers that received any
        step of the campaign's earlier runs to that target become ``skipped`` in the same
        transaction (a deliberate re-run).

        ``links``: the run's tracked links, (step, address) → number, stored in the same
        transaction (see ``queries.links.store_links``).
        """

        def finalize(conn: Connection) -> None:
            if skip_previous_of is not None:
                reruns.skip_previous_recipients(conn, run_id, *skip_previous_of)
            if links:
                lq.store_links(conn, run_id, links)
            if experiment is not None:
                xq.save(conn, run_id, experiment, start_at)
        from scheduler.ledger.planwriter import PlanWriter

        writer = PlanWriter(self.engine, run_id, start_at, finalize=finalize)
        return self._feed(writer, chunks, on_progress)

    def replan(
        self, run_id: int, chunks: Iterable[list[dict[str, Any]]], *, start_at: datetime,
        definition: dict[str, Any], fingerprint: str, options: RunOptions,
        on_progress: Callable[[int], None] | None = None,
        links: Mapping[tuple[int, str], int] | None = None,
        experiment: ExperimentPlan | None = None,
    ) -> tuple[int, int]:
        """Replace what a run has not yet handed to the service with a new plan.

        In one transaction: rows still ``planned`` or ``skipped`` are deleted, the new plan
        is written, and any new row whose recipient and step the run already sent, tried or
        settled is dropped, so nothing is sent twice. Returns (rows written, rows dropped
        as already handled); the run's definition, options and fingerprint become the new
        ones. ``links``: the run's tracked links, old numbers kept (see ``store_plan``).
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
            if links:
                lq.store_links(conn, run_id, links)
            if experiment is not None:
                xq.save(conn, run_id, experiment, start_at)
            return int(reruns.count_rows(conn, run_id))

        self.acquire(run_id)  # nobody dispatches the run while its plan is replaced
        from scheduler.ledger.planwriter import PlanWriter

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
        with access.transaction(self.engine, f"apply the new definition to run {run_id}") as conn:
            rq.update_run(conn, run_id, definition=_json(definition), fingerprint=fingerprint,
                          options=options.to_json())
            return reruns.unpin_removed_senders(conn, run_id, list(options.senders))

    def _feed(self, writer: PlanWriter, chunks: Iterable[list[dict[str, Any]]],
              on_progress: Callable[[int], None] | None) -> int:
        from scheduler.ledger.planwriter import gc_paused

        run_id = writer.run_id
        with gc_paused():
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

    def discard_interrupted_plans(
            self, *, campaign_name: str | None = None,
            spare: Collection[tuple[str, datetime | None]] = ()) -> list[int]:
        """Delete runs whose plan was never stored because the planner died.

        Such a run is ``planned`` with no deliveries and no live owner; it holds no rows, so
        deleting it loses nothing, and the campaign is simply planned again (a scheduled
        fire, whose (campaign, fire time) it would otherwise block, included). A fallback
        run is planned empty on purpose (its parent's recycling fills it): never one. Nor a
        run whose (definition path, fire time) is in ``spare``: a worker's own planning,
        whose child it stopped or saw die and whose run it is about to mark failed.
        """
        gone: list[int] = []
        for run in self.list_runs(campaign_name=campaign_name):
            if (run.status != RunStatus.PLANNED or run.planned_count
                    or run.parent_run_id is not None or planner_alive(run, self.clock())
                    or (run.definition_path, run.fire_time) in spare):
                continue
            assert run.id is not None
            with access.transaction(self.engine,
                                    f"discard the interrupted plan of run {run.id}") as conn:
                if dq.counts_by_state(conn, run.id):
                    continue
                child = recq.child_of(conn, run.id)  # made before the plan, still empty
                if child is not None and not dq.counts_by_state(conn, child):
                    rq.delete_run(conn, child)
                rq.delete_run(conn, run.id)
            gone.append(run.id)
        return gone

    # ------------------------------------------------------------------ suppression

    def suppress(self, number: str, *, source: str, reason: str | None = None) -> bool:
        """Add ``number`` to the suppression list and skip its pending deliveries.

        Returns False when it was already there (idempotent).
        """
        with access.transaction(self.engine, "add a number to the suppression list") as conn:
            return sq.add_suppression(conn, number, source=source, reason=reason,
                                      now=self.clock())

    def suppressions(self) -> list[Suppression]:
        """The whole suppression list."""
        with access.session(self.engine, "read the suppression list") as session:
            return list(session.exec(select(Suppression)).all())

    # ------------------------------------------------------------------ the engine's reads
    # (scheduler.dispatch.store's ScheduleStore and UnknownsStore)

    def unknown_facts(self, run_id: int, now: datetime, horizon: timedelta
                      ) -> tuple[list[UnknownRow], list[UptimeInterval], set[int]]:
        """The run's ``unknown`` rows, the receivers' uptime, the rows a stray proof makes
        unknowable (:func:`scheduler.dispatch.unknowns.judge_run` judges them)."""
        with access.read(self.engine, f"read the unknown rows of run {run_id}") as conn:
            return uq.unknown_facts(conn, run_id, now, horizon)

    def record_fire(self, name: str, fire_time: datetime, *, status: str = "due",
                    reason: str | None = None) -> bool:
        """Record that ``name`` was due at ``fire_time``; False when it was already."""
        with access.transaction(self.engine, f"record the fire of {name}") as conn:
            return sch.record_fire(conn, name, fire_time, recorded_at=self.clock(),
                                   status=status, reason=reason)

    def schedules(self) -> tuple[list[ScheduleRow], set[str]]:
        """Every schedule, and the campaigns that fired already."""
        with access.read(self.engine, "read the schedules") as conn:
            return sch.all_schedules(conn), sch.fired_campaigns(conn)

    def put_schedule(self, name: str, definition_path: str, trigger: str,
                     timezone: str) -> None:
        """Register (or replace) a campaign's schedule."""
        with access.transaction(self.engine, f"schedule {name}") as conn:
            sch.put_schedule(conn, name, definition_path, trigger, timezone, self.clock())

    def delete_schedule(self, name: str) -> bool:
        """Forget a campaign's schedule; False when unknown."""
        with access.transaction(self.engine, f"remove the schedule of {name}") as conn:
            return sch.delete_schedule(conn, name)

    def job_store(self) -> Any:
        """APScheduler's job store in the ledger's database."""
        return sch.job_store(self.engine)
