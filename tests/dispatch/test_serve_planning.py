"""``campaign serve`` plans each due fire in a child process: a campaign file that breaks a
render bound, or that hangs past every bound, fails its own run; the others are sent."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import update
from sqlmodel import Session, select
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.dispatch.triggers import add_schedule
from scheduler.ledger.db import open_ledger
from scheduler.ledger.models import Fire, Run
from scheduler.ledger.queries.tables import runs as runs_table
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.usecases.serve import Server
from scheduler.wiring import service_target
from tests.dispatch.support import RECIPIENTS, scheduled_project
from tests.factories import command_project

#: 99,999² loop steps: refused at once by the default loop bound, or, with the bounds
#: raised out of its way, a planning that never ends in any useful time.
LOOPS = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
UNBOUNDED = "[bounds]\nrender_max_loops = 2000000000\nrender_max_ms = 100000000\n"
#: Only the loop bound: the wall-time one (2 s by default) out of its way, so that a
#: stalled process (a loaded machine) cannot breach it first.
LOOP_BOUND_ONLY = "[bounds]\nrender_max_ms = 100000000\n"
DEAD_PID = 2**22 + 4321  # above Linux's largest pid


def _fires(ledger: Ledger) -> dict[str, Fire]:
    with Session(ledger.engine) as session:
        return {f.campaign_name: f for f in session.exec(select(Fire)).all()}


def _statuses(ledger: Ledger) -> dict[str, str]:
    return {r.campaign_name: r.status for r in ledger.list_runs()}


def _settled(ledger: Ledger, name: str) -> bool:
    """Whether ``name``'s fire was recorded and then settled (planned, failed or missed)."""
    fire = _fires(ledger).get(name)
    return fire is not None and fire.status != "due"


async def _until(done: Callable[[], bool], ledger: Ledger) -> None:
    """Wait until ``done()``; 90 s is a hang guard, not a speed bound."""
    deadline = time.monotonic() + 90
    while not done():
        assert time.monotonic() < deadline, ({n: (f.status, f.reason)
                                              for n, f in _fires(ledger).items()},
                                             _statuses(ledger))
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def _serving(ledger: Ledger, settings: Settings,
                   out: io.StringIO) -> AsyncIterator[list[dict[str, Any]]]:
    """Serve (the sandbox as the service, what it says in ``out``) until the block ends;
    yields the sandbox's sends."""
    stop = asyncio.Event()
    with service_target(settings, force_sandbox=True) as target:
        server = Server(settings, ledger, target, Console(file=out, width=300), poll_s=0.1)
        task = asyncio.create_task(server.serve(stop))
        try:
            yield target.sandbox.state.sandbox.world.sends
        finally:
            stop.set()
            await task


async def _serve_until_settled(ledger: Ledger, settings: Settings,
                               names: set[str]) -> tuple[dict[str, Run], list[dict[str, Any]]]:
    """Serve until every fire is settled and the good run is over; the runs and the sends."""
    def settled() -> bool:
        fires = _fires(ledger).values()
        return (len([f for f in fires if f.status != "due"]) == len(names)
                and _statuses(ledger).get("boa") in ("completed", "failed"))

    async with _serving(ledger, settings, io.StringIO()) as sends:
        await _until(settled, ledger)
    return {r.campaign_name: r for r in ledger.list_runs()}, sends


@pytest.mark.slow
async def test_a_template_over_its_bounds_fails_its_fire_and_the_good_one_is_sent(
        tmp_path: Path, ledger_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = datetime.now(UTC) + timedelta(seconds=1)
    campaigns = scheduled_project(tmp_path, at, boa={},
                                  laco={"text": LOOPS, "bounds": LOOP_BOUND_ONLY},
                                  quebrada={"text": "{{ nome }"})
    ledger = Ledger(open_ledger(ledger_url))
    for name, path in campaigns.items():
        add_schedule(ledger, name, str(path), "at:" + at.isoformat(), "UTC")
    runs, sends = await _serve_until_settled(
        ledger, Settings(state_dir=tmp_path / "state"), set(campaigns))
    assert runs["boa"].status == "completed", runs["boa"].stop_reason
    assert sorted(s["to"] for s in sends) == RECIPIENTS
    fires = _fires(ledger)
    assert (fires["boa"].status, fires["boa"].run_id) == ("started", runs["boa"].id)
    # the breach is one line with the file, its line, the row and the bound; its run failed
    reason = fires["laco"].reason or ""
    assert fires["laco"].status == "failed" and fires["laco"].run_id == runs["laco"].id
    assert "laco.toml:" in reason and "row 1: template looped more than 100,000 times" in reason
    assert "bounds.render_max_loops" in reason
    assert runs["laco"].status == "failed"
    assert "row 1: template looped more than" in (runs["laco"].stop_reason or "")
    # a file that does not even load makes no run: `campaign runs` shows its fire instead
    assert fires["quebrada"].status == "failed" and "quebrada" not in runs
    command_project(tmp_path, monkeypatch, ledger_url)
    shown = CliRunner().invoke(app, ["runs"])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "quebrada due at" in flat and "failed, no run:" in flat
    assert "template syntax error" in flat
    assert "looped more than 100,000 times" in flat  # run laco's reason, in its status line
    listed = json.loads(CliRunner().invoke(app, ["runs", "--json"]).stdout)
    assert [f["campaign"] for f in listed["fires_without_run"]] == ["quebrada"]


async def test_a_planning_that_hangs_past_every_bound_is_stopped_at_its_limit(
        tmp_path: Path, ledger_url: str, db_backend: str) -> None:
    if db_backend == "sqlite":
        # SQLite has one writer: a plan being stored holds it (README: serve on SQLite)
        pytest.skip("a plan holds SQLite's one write lock while it is stored")
    at = datetime.now(UTC) + timedelta(seconds=1)
    campaigns = scheduled_project(tmp_path, at, trava={"text": LOOPS, "bounds": UNBOUNDED})
    ledger = Ledger(open_ledger(ledger_url))
    add_schedule(ledger, "trava", str(campaigns["trava"]), "at:" + at.isoformat(), "UTC")
    # the only planning here: every planning child has the same plan_limit_s, so a good
    # campaign's child, slow to start on a loaded machine, would race it too
    settings = Settings(state_dir=tmp_path / "state", plan_limit_s=15)
    out = io.StringIO()
    async with _serving(ledger, settings, out):
        await _until(lambda: _settled(ledger, "trava"), ledger)
    fire = _fires(ledger)["trava"]
    said = "planning ran past its limit of 15 s and was stopped"
    assert fire.status == "failed" and said in (fire.reason or "")
    # the run the child had made by then is failed with the same reason, not deleted (a
    # child still starting at its limit, as on a loaded machine it can be, made none:
    # `campaign runs` then shows the failed fire alone)
    runs = ledger.list_runs()
    assert [(r.id, r.status) for r in runs] == ([(fire.run_id, "failed")] if fire.run_id
                                                 else [])
    assert all(said in (r.stop_reason or "") and r.finished_at is not None for r in runs)
    assert "interrupted; discarded" not in out.getvalue()


async def test_the_other_campaigns_are_sent_while_a_planning_hangs(
        tmp_path: Path, ledger_url: str, db_backend: str) -> None:
    if db_backend == "sqlite":
        pytest.skip("a plan holds SQLite's one write lock while it is stored")
    at = datetime.now(UTC) + timedelta(seconds=1)
    campaigns = scheduled_project(tmp_path, at, boa={}, trava={"text": LOOPS, "bounds": UNBOUNDED})
    ledger = Ledger(open_ledger(ledger_url))
    for name, path in campaigns.items():
        add_schedule(ledger, name, str(path), "at:" + at.isoformat(), "UTC")
    # the default plan_limit_s (15 min): nothing here waits for it, so no planning races it
    settings = Settings(state_dir=tmp_path / "state")
    out = io.StringIO()
    async with _serving(ledger, settings, out) as sends:
        await _until(lambda: _statuses(ledger).get("boa") == "completed"
                     and "trava" in _statuses(ledger), ledger)
        # boa was planned and sent in full while trava's planning went on
        assert sorted(s["to"] for s in sends) == RECIPIENTS
        (hung,) = ledger.list_runs(campaign_name="trava")
        assert (hung.status, hung.planned_count, _fires(ledger)["trava"].status) == (
            "planned", 0, "due")
        # its child is killed from outside (as the kernel's out-of-memory killer would): the
        # worker marks the run it left failed, and says why on its fire
        assert hung.owner_pid is not None and hung.owner_pid != os.getpid()
        os.kill(hung.owner_pid, signal.SIGKILL)
        await _until(lambda: _settled(ledger, "trava"), ledger)
    fire, (run,) = _fires(ledger)["trava"], ledger.list_runs(campaign_name="trava")
    assert (fire.status, fire.run_id, run.id, run.status) == ("failed", hung.id, hung.id,
                                                              "failed")
    said = "the planning process was killed by SIGKILL before its plan was stored"
    assert said in (run.stop_reason or "") and said in (fire.reason or "")
    assert "interrupted; discarded" not in out.getvalue()


def test_a_worker_leaves_the_run_of_its_own_stopped_planning_for_it_to_mark(
        ledger_url: str) -> None:
    """Between a killed child's end and its worker marking the run it left failed, the
    worker's own discard of interrupted plans must not delete that run (and its reason)."""
    ledger = Ledger(open_ledger(ledger_url))
    fire_time = datetime(2030, 1, 2, 9, 0, tzinfo=UTC)
    run_id = ledger.create_run(campaign_name="trava", channel="whatsapp",
                               definition_path="campaigns/trava.toml", definition={},
                               delivery_mode="x", timezone="UTC", fire_time=fire_time)
    with ledger.engine.begin() as conn:  # its child is gone
        conn.execute(update(runs_table).values(owner_pid=DEAD_PID))
    planning = {("campaigns/trava.toml", ledger.get_run(run_id).fire_time)}
    assert ledger.discard_interrupted_plans(spare=planning) == []
    assert ledger.discard_interrupted_plans(spare={("campaigns/trava.toml", fire_time)}) == []
    assert ledger.get_run(run_id).status == "planned"
    assert ledger.discard_interrupted_plans() == [run_id]  # nobody's left: planned again


@pytest.mark.slow
async def test_a_run_whose_sender_the_service_does_not_know_is_said_once(
        tmp_path: Path, ledger_url: str, make_sandbox: Any, db_backend: str) -> None:
    if db_backend != "sqlite":
        # there each sender's webhook follows its lease (Server.follow_leases), which says
        # a sender it cannot point once, on its own path: this is the single-worker path
        pytest.skip("on PostgreSQL a sender's webhook is pointed by follow_leases")
    box = make_sandbox()  # a service with no session s1: setting its webhook is a 404
    at = datetime.now(UTC) - timedelta(seconds=1)
    campaigns = scheduled_project(tmp_path, at, semsessao={})
    ledger = Ledger(open_ledger(ledger_url))
    add_schedule(ledger, "semsessao", str(campaigns["semsessao"]), "at:" + at.isoformat(), "UTC")
    settings = Settings(state_dir=tmp_path / "state", base_url=box.base_url,
                        api_key=box.api_key)
    out = io.StringIO()
    stop = asyncio.Event()
    with service_target(settings) as target:
        server = Server(settings, ledger, target, Console(file=out, width=80), poll_s=0.1)
        task = asyncio.create_task(server.serve(stop))
        deadline = time.monotonic() + 60  # a hang guard
        while "cannot start" not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            await asyncio.sleep(0.1)
        await asyncio.sleep(2)  # twenty more polls: not tried again, not said again
        stop.set()
        await task
    said = out.getvalue()
    assert "Traceback" not in said
    assert said.count("cannot start") == 1
    assert "Session not found" in " ".join(said.split())
    (run,) = ledger.list_runs()
    assert run.status == "planned"  # nothing sent, nothing lost: it starts once s1 exists
