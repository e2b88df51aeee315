"""``campaign events`` and ``campaign receiver`` through the real CLI."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger.db import open_ledger
from scheduler.ledger.exceptions import RunNotFound
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking import tracking_counts
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0, make_run, number
from tests.incli import campaign
from tests.tracking.support import TOKEN, accepted_run, mid, receipt, received, sent

runner = CliRunner()
CAMPAIGN = [sys.executable, "-c", "from scheduler.cli import main; main()"]


@pytest.fixture
def env(tmp_path: Path, ledger_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A fresh ledger and a known token, through the environment."""
    values = {"CAMPAIGN_DATABASE_URL": ledger_url,
              "CAMPAIGN_WEBHOOK_TOKEN": TOKEN}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CAMPAIGN_WEBHOOK_SECRET", raising=False)
    return {**os.environ, **values}


@pytest.fixture
def ledger(env: dict[str, str]) -> Iterator[Ledger]:
    """The ledger the commands will open."""
    engine = open_ledger(env["CAMPAIGN_DATABASE_URL"])
    yield Ledger(engine)
    engine.dispose()


def ingest(ledger: Ledger, *events: dict[str, Any]) -> None:
    """Store and apply events as the receiver would."""
    items = [incoming_from(e, json.dumps(e), T0) for e in events]
    store_and_apply(TrackingStore(ledger), items, ApplyContext(OptOutWords(["SAIR"])), T0)


class Lines:
    """Lines of a child's stdout, read in a thread, waited for with a time-out."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        self.thread = threading.Thread(target=lambda: [self._queue.put(line)
                                                       for line in stream], daemon=True)
        self.thread.start()

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        """The first line (from now on) containing ``text``."""
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line with {text!r}; saw {self.seen}") from None
            self.seen.append(line)
            if text in line:
                return line


@contextlib.contextmanager
def spawn(args: list[str], env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str],
                                                                  Lines]]:
    """Run ``campaign ARGS``; killed (if still running) and its pipes closed at the end."""
    process = subprocess.Popen([*CAMPAIGN, *args], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines = Lines(process)
    try:
        yield process, lines
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=20)
        lines.thread.join(timeout=20)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_events_lists_stored_events_newest_last(ledger: Ledger) -> None:
    empty = runner.invoke(app, ["events"])
    assert empty.exit_code == 0 and "no events stored" in empty.stdout
    run_id = accepted_run(ledger, 2)
    other = make_run(ledger, 1, name="other")  # same numbers, nothing sent yet
    ingest(ledger, sent(number(0), mid(0)),
           receipt("message.read", number(0), mid(0), T0 + timedelta(seconds=9)),
           received(number(1), "SAIR"))
    listed = runner.invoke(app, ["events"], env={"COLUMNS": "200"})  # one line each
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.strip().splitlines()
    assert [line.split()[4] for line in lines] == ["messages.sent", "message.read",
                                                   "messages.received"]
    assert "opted out" in lines[-1]
    as_json = runner.invoke(app, ["events", "--json", "--last", "2"])
    objects = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [o["event"] for o in objects] == ["message.read", "messages.received"]
    assert objects[0]["payload"]["data"]["message_id"] == mid(0)
    assert "dedupe_key" not in objects[0]
    for_run = runner.invoke(app, ["events", "--run", str(run_id), "--json"])
    assert len(for_run.stdout.splitlines()) == 3
    assert runner.invoke(app, ["events", "--run", str(other)]).stdout.startswith(
        "no events stored for run")
    missing = runner.invoke(app, ["events", "--run", "999"])
    assert isinstance(missing.exception, RunNotFound)
    assert tracking_counts(ledger, run_id) == {"sent": 1, "delivered": 1, "read": 1,
                                               "replied": 1, "opted_out": 1}


def test_an_unknown_run_is_one_line_and_exit_1(env: dict[str, str], ledger: Ledger) -> None:
    done = campaign("events", "--run", "42", env=env)  # the console script's main()
    assert done.returncode == 1
    assert "run 42 not found" in done.stderr and "Traceback" not in done.stderr


def _signal_state(pid: int) -> str:
    """The blocked, ignored and caught signal masks of a process (Linux)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "no /proc status"
    return " ".join(line for line in status.splitlines() if line.startswith("Sig"))


def test_events_tail_follows_new_events_until_ctrl_c(env: dict[str, str],
                                                     ledger: Ledger) -> None:
    accepted_run(ledger, 1)
    ingest(ledger, sent(number(0), mid(0)))
    with spawn(["events", "--tail", "--json"], env) as (process, lines):
        lines.wait_for('"messages.sent"')
        ingest(ledger, receipt("message.delivered", number(0), mid(0), T0))
        followed = json.loads(lines.wait_for('"message.delivered"'))
        assert followed["result"] == "delivered"
        signals = _signal_state(process.pid)  # said if it does not stop
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0, signals


def test_receiver_command_serves_until_ctrl_c_without_printing_the_token(
        env: dict[str, str], ledger: Ledger) -> None:
    run_id = accepted_run(ledger, 1)
    with spawn(["receiver", "--port", "0"], env) as (process, lines):
        first = lines.wait_for("receiver on")
        base = first.split("receiver on ")[1].split()[0]
        assert TOKEN not in first and "?token=…" in first
        answer = httpx.post(f"{base}/webhooks/session?token={TOKEN}",
                            json=sent(number(0), mid(0)), timeout=10)
        assert answer.status_code == 200, answer.text
        assert tracking_counts(ledger, run_id)["sent"] == 1
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
        lines.thread.join(timeout=20)
        assert process.stderr is not None
        assert TOKEN not in "".join(lines.seen) + process.stderr.read()
