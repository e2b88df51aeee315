"""A run that no live process will send is told: the pure decision (which live worker may
serve a run, and the reason when none may), then ``campaign status``, ``runs`` and
``workers`` over a ledger holding such a run, on either database."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.dispatch.workers import WorkerSeat
from scheduler.ledger import access
from scheduler.ledger.models import Run
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.views.unserved import ServingWorker, judge_serving, unserved_runs
from scheduler.wiring import store_for, worker_store
from tests.factories import T0, command_project, make_run, open_test_ledger

API = "service:api.example.com:443"
LOCAL = "service:127.0.0.1:8787"


def _run(status: str = RunStatus.RUNNING, target: str | None = API,
         planned_count: int = 10) -> Run:
    return Run(id=7, campaign_id=1, campaign_name="lote", channel="whatsapp", status=status,
               created_at=T0, planned_count=planned_count, target=target)


# --------------------------------------------------------------------------- the decision


def test_a_run_whose_target_no_live_worker_sends_to_is_unserved_and_says_why() -> None:
    workers = [ServingWorker(id="w1", target=LOCAL), ServingWorker(id="w2", target=LOCAL)]
    verdict = judge_serving(_run(), held=False, workers=workers)
    assert verdict is not None
    assert verdict.reason == ("run 7 (lote) is sent by no live worker: it was started "
                              "against api.example.com:443; workers w1, w2 send to "
                              "127.0.0.1:8787 and leave it alone")
    assert "`campaign serve` with base_url pointing at api.example.com:443" in verdict.advice
    assert "`campaign cancel 7`" in verdict.advice
    assert verdict.lines() == [verdict.reason, f"to continue it: {verdict.advice}"]


def test_workers_of_several_targets_are_each_named() -> None:
    workers = [ServingWorker(id="w1", target=LOCAL), ServingWorker(id="w2", target="sandbox")]
    verdict = judge_serving(_run(), held=False, workers=workers)
    assert verdict is not None
    assert ("worker w1 sends to 127.0.0.1:8787; worker w2 sends to the embedded sandbox: "
            "each leaves it alone") in verdict.reason


def test_one_worker_of_the_run_s_target_serves_it() -> None:
    workers = [ServingWorker(id="w1", target=LOCAL), ServingWorker(id="w2", target=API)]
    assert judge_serving(_run(), held=False, workers=workers) is None


def test_a_run_of_the_embedded_sandbox_asks_for_a_serve_without_base_url() -> None:
    verdict = judge_serving(_run(target="sandbox"), held=False,
                            workers=[ServingWorker(id="w1", target=LOCAL)])
    assert verdict is not None
    assert "it was started against the embedded sandbox;" in verdict.reason
    assert verdict.advice.startswith("start `campaign serve` with no base_url")


def test_an_unrecorded_target_on_either_side_is_given_the_benefit_of_the_doubt() -> None:
    assert judge_serving(_run(), held=False, workers=[ServingWorker(id="old")]) is None
    assert judge_serving(_run(target=None), held=False,
                         workers=[ServingWorker(id="w1", target=LOCAL)]) is None


def test_a_run_held_by_a_live_process_is_served_whatever_the_workers() -> None:
    # a foreground `campaign run` (or its planner) holds it: no worker is needed
    assert judge_serving(_run(), held=True, workers=[]) is None
    assert judge_serving(_run(), held=True,
                         workers=[ServingWorker(id="w1", target=LOCAL)]) is None


def test_no_live_worker_and_no_owner_says_nothing_is_sending_it() -> None:
    verdict = judge_serving(_run(), held=False, workers=[])
    assert verdict is not None
    assert verdict.reason == ("run 7 (lote) is sent by no live worker: it is running, but "
                              "no `campaign serve` is live and no `campaign run` holds it")
    assert verdict.advice.startswith("start `campaign serve` or `campaign resume 7` (sending "
                                     "to api.example.com:443)")


@pytest.mark.parametrize("status", [RunStatus.PAUSED, RunStatus.COMPLETED,
                                    RunStatus.CANCELLED, RunStatus.FAILED])
def test_a_paused_or_finished_run_waits_for_no_sender(status: str) -> None:
    assert judge_serving(_run(status=status), held=False, workers=[]) is None


def test_a_planned_run_waits_for_a_sender_once_its_plan_is_stored() -> None:
    assert judge_serving(_run(status=RunStatus.PLANNED), held=False, workers=[]) is not None
    # no rows yet: its planner is still storing it, or died and it will be discarded
    assert judge_serving(_run(status=RunStatus.PLANNED, planned_count=0), held=False,
                         workers=[]) is None


# --------------------------------------------------------------------------- the ledger


@pytest.fixture
def real_ledger(ledger_url: str) -> Iterator[Ledger]:
    """A ledger on the real clock (the commands judge liveness by the real time)."""
    with open_test_ledger(ledger_url) as opened:
        yield opened


def _dead_pid() -> int:
    """The pid of a process that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _running(ledger: Ledger, target: str, owner_pid: int) -> int:
    """A running run of 5 rows sent to ``target``, held by ``owner_pid`` (fresh heartbeat)."""
    run_id = make_run(ledger, 5, name="lote")
    with access.transaction(ledger.engine) as conn:
        rq.update_run(conn, run_id, status=RunStatus.RUNNING, target=target,
                      started_at=datetime.now(UTC))
        rq.take_lease(conn, run_id, owner_pid, socket.gethostname(), datetime.now(UTC))
    return run_id


def test_a_run_whose_process_died_is_told_and_one_held_here_is_not(
        real_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        ledger_url: str) -> None:
    orphan = _running(real_ledger, API, _dead_pid())
    held = _running(real_ledger, API, os.getpid())  # as a foreground `campaign run`
    assert set(unserved_runs(real_ledger, 15.0, datetime.now(UTC))) == {orphan}

    command_project(tmp_path, monkeypatch, ledger_url)
    runner = CliRunner()
    shown = runner.invoke(app, ["status", str(orphan)])
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.output.split())  # as one line, however the 80 columns wrap it
    assert (f"run {orphan} (lote) is sent by no live worker: it is running, but no "
            "`campaign serve` is live") in said
    assert f"`campaign resume {orphan}`" in said
    quiet = runner.invoke(app, ["status", str(held)])
    assert "sent by no live worker" not in quiet.output
    assert json.loads(runner.invoke(app, ["status", str(held), "--json"]).output)[
        "unserved"] is None
    listed = json.loads(runner.invoke(app, ["runs", "--json"]).output)["runs"]
    assert {r["run"]: r["unserved"] is not None for r in listed} == {orphan: True,
                                                                     held: False}
    assert f"run {orphan} (lote) is sent by no live worker" in " ".join(
        runner.invoke(app, ["runs"]).output.split())


def test_a_live_worker_of_another_target_is_named_by_status_and_workers(
        real_ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        ledger_url: str) -> None:
    seat = WorkerSeat(worker_store(real_ledger), store_for(real_ledger), target=LOCAL)
    seat.register()
    theirs = _running(real_ledger, API, _dead_pid())
    ours = _running(real_ledger, LOCAL, _dead_pid())  # the live worker continues this one
    command_project(tmp_path, monkeypatch, ledger_url)
    runner = CliRunner()

    def said(*args: str) -> str:  # as one line, however the console's width wraps it
        return " ".join(runner.invoke(app, list(args)).output.split())

    status = said("status", str(theirs))
    assert (f"run {theirs} (lote) is sent by no live worker: it was started against "
            f"api.example.com:443; worker {seat.id} sends to 127.0.0.1:8787 and leaves it "
            "alone") in status
    assert "start `campaign serve` with base_url pointing at api.example.com:443" in status
    assert "sent by no live worker" not in said("status", str(ours))

    workers = said("workers")
    assert "sends to" in workers  # a column: where each worker sends
    assert f"run {theirs} (lote) is sent by no live worker" in workers
    assert f"run {ours}" not in workers
    shown = json.loads(runner.invoke(app, ["workers", "--json"]).output)
    assert [w["target"] for w in shown["workers"]] == [LOCAL]
    (verdict,) = shown["unserved"]
    assert verdict["run"] == theirs and verdict["target"] == API
    assert verdict["workers"] == [{"id": seat.id, "target": LOCAL}]
    seat.stop()
