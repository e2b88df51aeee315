"""``campaign serve`` plans each due fire in a child process: a campaign file that breaks a
render bound, or that hangs past every bound, fails its own run; the others are sent."""

from __future__ import annotations

import asyncio
import io
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from sqlmodel import Session, select
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.dispatch.triggers import add_schedule
from scheduler.ledger.db import open_ledger
from scheduler.ledger.models import Fire, Run
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


def _fires(ledger: Ledger) -> dict[str, Fire]:
    with Session(ledger.engine) as session:
        return {f.campaign_name: f for f in session.exec(select(Fire)).all()}


async def _serve_until_settled(ledger: Ledger, settings: Settings,
                               names: set[str]) -> tuple[dict[str, Run], list[dict[str, Any]]]:
    """Serve until every fire is settled and the good run is over; the runs and the sends."""
    stop = asyncio.Event()
    with service_target(settings, force_sandbox=True) as target:
        server = Server(settings, ledger, target, Console(quiet=True), poll_s=0.1)
        task = asyncio.create_task(server.serve(stop))
        deadline = time.monotonic() + 90  # a hang guard, not a speed bound
        while True:
            fires = _fires(ledger)
            runs = {r.campaign_name: r for r in ledger.list_runs()}
            if (len([f for f in fires.values() if f.status != "due"]) == len(names)
                    and runs.get("boa") and runs["boa"].status in ("completed", "failed")):
                break
            assert time.monotonic() < deadline, {n: (f.status, f.reason)
                                                 for n, f in fires.items()}
            await asyncio.sleep(0.1)
        stop.set()
        await task
        return runs, target.sandbox.state.sandbox.world.sends


@pytest.mark.slow
async def test_a_template_over_its_bounds_fails_its_fire_and_the_good_one_is_sent(
        tmp_path: Path, ledger_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = datetime.now(UTC) + timedelta(seconds=1)
    campaigns = scheduled_project(tmp_path, at, boa={}, laco={"text": LOOPS},
                         quebrada={"text": "{{ nome }"})
    ledger = Ledger(open_ledger(ledger_url))
    for name, path in campaigns.items():
        add_schedule(ledger, name, str(path), "at:" + at.isoformat(), "UTC")
    runs, sends = await _serve_until_settled(
        ledger, Settings(state_dir=tmp_path / "state"), set(campaigns))
    assert runs["boa"].status == "completed"
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
    campaigns = scheduled_project(tmp_path, at, boa={}, trava={"text": LOOPS, "bounds": UNBOUNDED})
    ledger = Ledger(open_ledger(ledger_url))
    for name, path in campaigns.items():
        add_schedule(ledger, name, str(path), "at:" + at.isoformat(), "UTC")
    # the limit leaves the child time to start and make its run on a loaded machine (a
    # fresh CI's PostgreSQL pass stopped it at 8 s before its run existed)
    settings = Settings(state_dir=tmp_path / "state", plan_limit_s=15)
    runs, sends = await _serve_until_settled(ledger, settings, set(campaigns))
    # the good campaign was sent in full while the other one was still planning
    good, hung = runs["boa"], runs["trava"]
    assert good.status == "completed" and len(sends) == 3
    assert good.finished_at is not None and hung.finished_at is not None
    assert good.finished_at < hung.finished_at
    fires = _fires(ledger)
    assert fires["trava"].status == "failed" and fires["trava"].run_id == hung.id
    assert hung.status == "failed"
    assert "planning ran past its limit of 15 s and was stopped" in (hung.stop_reason or "")


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
