"""Scheduling: APScheduler fires are recorded once, misfires coalesced, late ones missed."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apscheduler.triggers.cron import CronTrigger
from rich.console import Console
from sqlmodel import Session, select

from scheduler.dispatch.triggers import (
    Triggers,
    add_schedule,
    campaign_due,
    record_fire,
    remove_schedule,
)
from scheduler.ledger.db import open_ledger
from scheduler.ledger.models import Fire
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.usecases.serve import Server
from scheduler.wiring import service_target
from tests.dispatch.support import RECIPIENTS, scheduled_project
from tests.waiting import wait_for


def _project(tmp_path: Path, at: datetime) -> Path:
    return scheduled_project(tmp_path, at, lembrete={})["lembrete"]


def _fires(ledger: Ledger) -> list[Fire]:
    with Session(ledger.engine) as session:
        return list(session.exec(select(Fire)).all())


def _wait(predicate, timeout: float = 10.0) -> None:
    wait_for(predicate, timeout)


def test_a_fire_is_recorded_once(ledger_url: str) -> None:
    ledger = Ledger(open_ledger(ledger_url))
    add_schedule(ledger, "c", "c.toml", "cron:0 9 * * *", "UTC")
    moment = datetime(2026, 11, 23, 9, tzinfo=UTC)
    assert record_fire(ledger, "c", moment) is True
    assert record_fire(ledger, "c", moment) is False
    assert len(_fires(ledger)) == 1
    assert remove_schedule(ledger, "c") is True
    assert remove_schedule(ledger, "c") is False


def test_misfires_are_coalesced_into_one_fire(ledger_url: str) -> None:
    ledger = Ledger(open_ledger(ledger_url))
    add_schedule(ledger, "c", "c.toml", "cron:* * * * *", "UTC")
    triggers = Triggers(ledger)
    now = datetime.now(UTC)
    triggers.scheduler.add_job(campaign_due, CronTrigger.from_crontab("* * * * *",
                                                                       timezone="UTC"),
                               args=["c"], id="c", next_run_time=now - timedelta(minutes=3))
    triggers.scheduler.start()
    try:
        _wait(lambda: len(_fires(ledger)) >= 1)
        time.sleep(0.3)
        fires = _fires(ledger)
        assert len(fires) == 1
        assert fires[0].status == "due"
        assert now - timedelta(minutes=1) <= fires[0].fire_time <= now + timedelta(seconds=1)
    finally:
        triggers.stop()


def test_a_fire_later_than_the_start_grace_is_missed_not_started(ledger_url: str) -> None:
    ledger = Ledger(open_ledger(ledger_url))
    past = datetime.now(UTC) - timedelta(hours=2)
    add_schedule(ledger, "c", "c.toml", f"at:{past.isoformat()}", "UTC")
    triggers = Triggers(ledger, start_grace_s=3600)
    triggers.start()
    try:
        _wait(lambda: len(_fires(ledger)) >= 1)
    finally:
        triggers.stop()
    (fire,) = _fires(ledger)
    assert fire.status == "missed"
    assert "not started" in (fire.reason or "")
    assert ledger.list_runs() == []


async def test_serve_starts_a_due_campaign_and_completes_it(tmp_path: Path,
                                                            ledger_url: str) -> None:
    path = _project(tmp_path, datetime.now(UTC) + timedelta(seconds=1))
    ledger = Ledger(open_ledger(ledger_url))
    add_schedule(ledger, "lembrete", str(path), "at:"
                 + (datetime.now(UTC) + timedelta(seconds=1)).isoformat(), "UTC")
    settings = Settings(state_dir=tmp_path / "state")
    stop = asyncio.Event()
    with service_target(settings, force_sandbox=True) as target:
        server = Server(settings, ledger, target, Console(quiet=True), poll_s=0.1)
        task = asyncio.create_task(server.serve(stop))
        deadline = time.monotonic() + 20
        while not any(r.status == "completed" for r in ledger.list_runs()):
            assert time.monotonic() < deadline, [r.status for r in ledger.list_runs()]
            await asyncio.sleep(0.1)
        stop.set()
        await task
        sends = target.sandbox.state.sandbox.world.sends
    (run,) = ledger.list_runs()
    assert run.fire_time is not None
    assert sum(ledger.counts(run.id).values()) == 3
    assert set(ledger.counts(run.id)) <= {"accepted", "sent", "delivered", "read"}
    assert sorted(s["to"] for s in sends) == RECIPIENTS
    (fire,) = _fires(ledger)
    assert (fire.status, fire.run_id) == ("started", run.id)
