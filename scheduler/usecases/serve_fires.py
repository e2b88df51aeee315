"""``campaign serve``'s due fires: each planned into a run in a child process with a time
limit (:mod:`scheduler.usecases.plan_process`), or recorded as missed when it is noticed
later than the start grace. Only the trigger leader plans fires."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from scheduler.core.time_words import local_time, span
from scheduler.ledger.fire_store import FireStore
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.usecases.plan_process import PlanProcesses, run_of
from scheduler.wiring import ServiceTarget


class DueFires:
    """The due fires being planned, and what became of each (said on ``console``)."""

    def __init__(self, ledger: Ledger, target: ServiceTarget, console: Console, *,
                 start_grace: timedelta, plan_limit_s: float) -> None:
        self.ledger = ledger
        self.target = target
        self.console = console
        self.start_grace = start_grace
        #: Due fires being planned, each in a child process with a time limit.
        self.planner = PlanProcesses(ledger, ledger.engine.url.render_as_string(
            hide_password=False), plan_limit_s)
        self.planning: dict[int, asyncio.Task[None]] = {}

    def start_due_fires(self) -> None:
        """Start planning each recorded due fire in a child process (late ones are recorded
        as missed); the worker goes on serving while they plan (see ``_plan_fire``)."""
        now = self.ledger.clock()
        # a killed planning must not block its fire (ours settle their own runs)
        self.ledger.discard_interrupted_plans(spare=self.planner.in_flight)
        for fire, zone in FireStore(self.ledger.engine).due_fires(skip=self.planning):
            if now - fire.fire_time > self.start_grace:
                self._settle_fire(fire, zone, "missed", None,
                                  f"noticed {span(now - fire.fire_time)} later, more than the "
                                  f"start grace of {span(self.start_grace)}: not started")
                continue
            if not self._settle_if_planned(fire, zone):
                self.planning[fire.id] = asyncio.create_task(self._plan_fire(fire, zone, now))

    async def cancel(self) -> None:
        """Cut the plannings short: a cut one stores nothing, and the next serve plans it
        again."""
        for planning in self.planning.values():
            planning.cancel()
        if self.planning:
            await asyncio.gather(*self.planning.values(), return_exceptions=True)

    def _settle_if_planned(self, fire: Any, zone: str) -> bool:
        """A fire whose run was stored although the fire was not settled (the worker stopped
        or died between the two) is ``started``; it must not be planned a second time."""
        run_id = run_of(self.ledger, fire.definition_path, fire.fire_time)
        run = self.ledger.get_run(run_id) if run_id is not None else None
        if run is None or (run.status == RunStatus.PLANNED and not run.planned_count):
            return False
        self._settle_fire(fire, zone, "started", run_id, None)
        return True

    async def _plan_fire(self, fire: Any, zone: str, now: datetime) -> None:
        """Plan one due fire in a child process, then record what became of it; a campaign
        file that fails, breaks a render bound or hangs fails its own run only."""
        try:
            outcome = await self.planner.plan(Path(fire.definition_path), start_at=now,
                                              fire_time=fire.fire_time,
                                              target=self.target.ledger_value)
            if outcome.error is None:
                self._settle_fire(fire, zone, "started", outcome.run_id, None)
            else:
                self._settle_fire(fire, zone, "failed", outcome.run_id, outcome.error)
        except asyncio.CancelledError:
            self._settle_if_planned(fire, zone)  # stored before the stop: started
            raise
        finally:
            self.planning.pop(fire.id, None)

    def _settle_fire(self, fire: Any, zone: str, status: str, run_id: int | None,
                     reason: str | None) -> None:
        """Record what became of ``fire`` and say it."""
        at = local_time(fire.fire_time, zone)
        FireStore(self.ledger.engine).settle_fire(fire.id, status, run_id, reason)
        self.console.print(f"{fire.campaign_name} due at {at}: {status}"
                           + (f" (run {run_id})" if run_id else "")
                           + (f": {reason}" if reason else ""), markup=False)
