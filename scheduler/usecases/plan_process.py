"""Planning a scheduled run in a child process, so that no campaign file can hang a worker.

``campaign serve`` plans each due fire here instead of in its own event loop: the worker
goes on renewing its leases and dispatching its other runs while a plan is rendered and
stored. Rendering has its own bounds (``scheduler.campaign.render_bounds``); a plan that
still runs past ``plan_limit_s`` (something no bound catches, such as a library call that
never returns) is stopped: the child is killed, and the run it created is marked failed
with that reason, so ``runs`` and ``status`` say what happened. Nothing of a killed plan is
stored (the plan is one transaction).

The child is ``python -m scheduler.usecases.plan_process``: it reads a :class:`PlanRequest` as
JSON on its standard input (the database URL, with its password, never on a command line)
and writes one :class:`PlanOutcome` as JSON on its standard output.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import sys
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from scheduler.core.time_words import span
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus


class PlanRequest(BaseModel):
    """What the child plans: a campaign file as a new run of the ledger at ``database_url``."""

    database_url: str
    campaign_path: str
    start_at: datetime
    fire_time: datetime | None
    target: str | None


class PlanOutcome(BaseModel):
    """What became of one planning: the run it made (if any), or why it failed."""

    run_id: int | None
    error: str | None = None


def run_of(ledger: Ledger, campaign_path: str, fire_time: datetime | None) -> int | None:
    """The run a planning of ``campaign_path`` at ``fire_time`` created, if it got that far
    (the ledger returns aware UTC times, so they compare as they are)."""
    for run in ledger.list_runs():
        if run.definition_path == campaign_path and run.fire_time == fire_time:
            return run.id
    return None


class PlanProcesses:
    """The plannings of a worker, each in its own process, each with a time limit."""

    def __init__(self, ledger: Ledger, database_url: str, limit_s: float) -> None:
        self.ledger = ledger
        self.database_url = database_url
        self.limit_s = limit_s
        #: (campaign path, fire time) of each planning not settled yet: the worker leaves
        #: their runs alone (``Ledger.discard_interrupted_plans(spare=...)``). Once a child
        #: is stopped or dies, its pid is gone before :meth:`plan` marks the run it left
        #: failed; a discard in between would delete that run, and with it the reason.
        self.in_flight: set[tuple[str, datetime | None]] = set()

    async def plan(self, campaign_path: Path, *, start_at: datetime,
                   fire_time: datetime | None, target: str | None) -> PlanOutcome:
        """Plan ``campaign_path`` as a new run in a child process; wait without blocking.

        Cancelled (the worker is stopping), the child is killed: nothing is stored, and the
        next serve plans the fire again.
        """
        key = (str(campaign_path), fire_time)
        self.in_flight.add(key)
        try:
            return await self._plan(campaign_path, start_at=start_at, fire_time=fire_time,
                                    target=target)
        finally:
            self.in_flight.discard(key)

    async def _plan(self, campaign_path: Path, *, start_at: datetime,
                    fire_time: datetime | None, target: str | None) -> PlanOutcome:
        request = PlanRequest(database_url=self.database_url, campaign_path=str(campaign_path),
                              start_at=start_at, fire_time=fire_time, target=target)
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "scheduler.usecases.plan_process",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(
                child.communicate(request.model_dump_json().encode()), timeout=self.limit_s)
        except TimeoutError:
            await _kill(child)
            return self._failed(campaign_path, fire_time,
                                f"planning ran past its limit of {span(self.limit_s)} and was "
                                "stopped (plan_limit_s in config.toml; a template or a lookup "
                                "that never ends?)")
        except asyncio.CancelledError:
            await _kill(child)
            raise
        lines = out.decode("utf-8", "replace").strip().splitlines()
        if child.returncode == 0 and lines:
            return PlanOutcome.model_validate_json(lines[-1])
        last = (err.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        return self._failed(campaign_path, fire_time,
                            f"the planning process {_ending(child.returncode)} before its "
                            f"plan was stored: {last}")

    def _failed(self, campaign_path: Path, fire_time: datetime | None,
                reason: str) -> PlanOutcome:
        """Mark the run the stopped planning created (if any) failed with ``reason``."""
        run_id = run_of(self.ledger, str(campaign_path), fire_time)
        if run_id is not None:
            self.ledger.set_status(run_id, RunStatus.FAILED, reason=reason)
        return PlanOutcome(run_id=run_id, error=reason)


def _ending(code: int | None) -> str:
    """How a child ended: its exit code, or the signal that killed it (the kernel's
    out-of-memory killer sends SIGKILL)."""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"ended with code {code}"


async def _kill(child: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.kill()
    await child.wait()


def _die_with_parent() -> None:
    """Linux: the child is killed when its worker dies (a plan no worker waits for would
    otherwise be stored behind the back of the fire it was for, which is planned again)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def main() -> None:
    """The child: plan the request read on stdin; write its outcome on stdout."""
    _die_with_parent()
    from scheduler.core.errors import SchedulerError
    from scheduler.ledger.db import open_ledger
    from scheduler.usecases.planning import plan_run

    request = PlanRequest.model_validate_json(sys.stdin.read())
    ledger = Ledger(open_ledger(request.database_url))
    try:
        run_id = plan_run(ledger, Path(request.campaign_path), start_at=request.start_at,
                          fire_time=request.fire_time, target=request.target)
        outcome = PlanOutcome(run_id=run_id)
    except SchedulerError as exc:
        outcome = PlanOutcome(run_id=run_of(ledger, request.campaign_path, request.fire_time),
                              error=str(exc))
    finally:
        ledger.engine.dispose()
    print(outcome.model_dump_json(), flush=True)


if __name__ == "__main__":
    main()
