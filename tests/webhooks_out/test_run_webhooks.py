"""Outgoing webhooks of real runs: ``campaign run`` against the sandbox in a process of its
own, a receiver of the test's own on loopback; every signature checked by
``standardwebhooks``, every event of the ledger received once per id, also across a
``kill -9`` of the worker while the receiver was down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.ledger import access
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import outbox as oq
from tests.app.support import CAMPAIGN, clean_env, cli, text_sends, wait_for
from tests.factories import write_project
from tests.webhooks_out.support import SECRET, Receiver

ALL_EVENTS = ('["run.started", "run.paused", "run.resumed", "run.completed", "run.failed", '
              '"run.cancelled", "run.stuck", "sender.throttled", "sender.paused", '
              '"sender.logged_out", "sender.resumed", "recipient.replied", '
              '"recipient.opted_out", "experiment.decided"]')


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """The test's own receiver on loopback, stopped at the end."""
    got = Receiver()
    yield got
    got.down()


def _subscribe(root: Path, receiver: Receiver) -> None:
    """The project's config.toml: one subscription to every event, short back-off."""
    (root / "config.toml").write_text(
        f'[[webhooks]]\nurl = "{receiver.url}"\nevents = {ALL_EVENTS}\n'
        f'secret = "{SECRET}"\n\n'
        "[webhook_delivery]\nfirst_retry_s = 0.2\nmax_retry_s = 1\ntimeout_s = 2\n")


def _ledger_events(url: str) -> list[tuple[str, str]]:
    """``(msg_id, type)`` of every event in the outbox, and the deliveries' states."""
    engine = open_ledger(url)
    try:
        with access.read(engine) as conn:
            return [(str(r.msg_id), str(r.type)) for r in conn.execute(
                oq.outbox_events.select().order_by(oq.E.id))]
    finally:
        engine.dispose()


def _delivery_states(url: str) -> Counter[str]:
    engine = open_ledger(url)
    try:
        with access.read(engine) as conn:
            return Counter(r.state for r in oq.list_deliveries(conn, limit=10_000))
    finally:
        engine.dispose()


@pytest.mark.slow
def test_every_event_of_a_run_arrives_signed(make_sandbox, tmp_path: Path, ledger_url: str,
                                             receiver: Receiver) -> None:
    service = make_sandbox(delivered_rate=1.0, reply_rate=1.0, opt_out_rate=0.5,
                           recipient_delay_ms=(5, 20))
    service.create_session("s1")
    root = tmp_path / "shop"
    campaign = write_project(root, 12, rate="6/s")
    _subscribe(root, receiver)
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_DATABASE_URL=ledger_url)
    done = cli(env, "run", str(campaign), cwd=root)
    assert done.returncode == 0, done.stderr
    written = _ledger_events(ledger_url)
    bodies = receiver.bodies()  # each signature verified by standardwebhooks
    types = Counter(b["type"] for b in bodies)
    assert types["run.started"] == 1 and types["run.completed"] == 1
    assert types["recipient.replied"] >= 1 and types["recipient.opted_out"] >= 1
    states = _delivery_states(ledger_url)
    assert states["failed"] == 0 and states["delivered"] == len(set(receiver.ids()))
    received = Counter(receiver.ids())
    # what the run wrote was delivered before it exited, once per id (a reply stored in
    # the run's last moment may wait, pending, for the next process)
    assert set(received) <= {msg for msg, _t in written} and set(received.values()) == {1}
    assert len(received) + states["pending"] + states["failing"] == len(written)
    ends = [b for b in bodies if b["type"] == "run.completed"]
    assert ends[0]["data"]["campaign"] == "lote"
    numbers = {"".join(c for c in send["to"] if c.isdigit())
               for send in text_sends(service.sends())}
    run_events = [json.dumps(b) for b in bodies if b["type"].startswith("run.")]
    assert numbers and not any(n in text for n in numbers for text in run_events)
    reply = next(b for b in bodies if b["type"] == "recipient.replied")["data"]
    assert set(reply) == {"run_id", "campaign", "delivery_id", "number", "kind", "opted_out",
                          "received_at"}


@pytest.mark.slow
def test_events_of_a_killed_worker_arrive_after_the_restart_once_per_id(
        make_sandbox, tmp_path: Path, ledger_url: str, receiver: Receiver) -> None:
    service = make_sandbox()
    service.create_session("s1")
    root = tmp_path / "shop"
    campaign = write_project(root, 40, rate="10/s")
    _subscribe(root, receiver)
    receiver.down()  # the change is written, its delivery cannot happen before the kill
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_VERIFY_GRACE_S="2",
                    CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="2")
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(text_sends(service.sends())) >= 10, what="ten sends")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _ledger_events(ledger_url)
    assert [t for _m, t in before] == ["run.started"]
    assert receiver.received == []
    receiver.up()
    again = cli(env, "run", str(campaign), cwd=root)
    assert again.returncode == 0, again.stderr
    written = _ledger_events(ledger_url)
    assert [t for _m, t in written] == ["run.started", "run.completed"]
    bodies = receiver.bodies()  # verified
    assert Counter(receiver.ids()) == Counter({msg: 1 for msg, _t in written})
    assert [b["type"] for b in bodies] == ["run.started", "run.completed"]
    assert _delivery_states(ledger_url) == Counter({"delivered": 2})


@pytest.mark.slow
def test_campaign_serve_delivers_a_killed_runs_backlog_once_the_receiver_is_up(
        make_sandbox, tmp_path: Path, ledger_url: str, receiver: Receiver) -> None:
    service = make_sandbox()
    service.create_session("s1")
    root = tmp_path / "shop"
    campaign = write_project(root, 30, rate="10/s")
    _subscribe(root, receiver)
    receiver.down()
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_VERIFY_GRACE_S="2",
                    CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="2", CAMPAIGN_RECEIVER_PORT="0")
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(text_sends(service.sends())) >= 5, what="five sends")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    serve = subprocess.Popen([*CAMPAIGN, "serve"], env=env, cwd=root,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # serve takes the run over and ends it; its loop tries while the receiver is
        # down (a while: until the run completed and both events failed a try), then
        # the receiver is up and gets the backlog
        wait_for(lambda: _delivery_states(ledger_url)["failing"] == 2, timeout=90,
                 what="both events failing while the receiver is down")
        assert receiver.received == []
        receiver.up()
        wait_for(lambda: "run.completed" in {b["type"] for b in receiver.bodies()},
                 timeout=90, what="run.completed at the receiver")
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
    written = _ledger_events(ledger_url)
    assert [t for _m, t in written] == ["run.started", "run.completed"]
    assert Counter(receiver.ids()) == Counter({msg: 1 for msg, _t in written})
