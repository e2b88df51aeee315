"""``campaign serve`` sends SMS and voice runs as it sends WhatsApp ones: a run planned by a
fire (or by hand) on any channel is dispatched by the live workers; on PostgreSQL the SMS /
voice account is one sender, leased to one worker at a time like a WhatsApp session."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DONE_STATES
from scheduler.sandbox.testing import SandboxHandle, write_text_project
from scheduler.usecases.planning import plan_run
from scheduler.wiring import target_of
from tests.channels.support import (
    SANDBOX_PRICES,
    numbers_sent,
    sms_number,
    sms_project,
    voice_project,
)
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    deliveries,
    leases,
    live_worker_ids,
    plan,
    wait_until,
    worker_env,
)


def _plan(ledger: Ledger, campaign: Path, sandbox: SandboxHandle) -> int:
    return plan_run(ledger, campaign, start_at=datetime.now(UTC),
                    target=target_of((sandbox.base_url, sandbox.api_key)))


def _completed(ledger: Ledger, run_id: int) -> bool:
    return ledger.get_run(run_id).status == "completed"


def test_serve_sends_an_sms_run_and_a_voice_run_that_nobody_runs_in_the_foreground(
        make_sandbox, tmp_path: Path, ledger_url: str, workers: WorkerPool) -> None:
    box = make_sandbox(sms_price_micro=SANDBOX_PRICES)
    root = tmp_path / "shop"
    sms = sms_project(root, 60, batch=20)
    voice = voice_project(root, 8, max_calls=3)
    ledger = Ledger(open_ledger(ledger_url))
    sms_run, voice_run = _plan(ledger, sms, box), _plan(ledger, voice, box)

    workers.start(root, worker_env(box, ledger_url))
    wait_until(lambda: _completed(ledger, sms_run) and _completed(ledger, voice_run), 90,
               "both runs to complete", workers)

    sent = numbers_sent([s for s in box.sends() if "/sms/" in s["path"]], "/sms/")
    assert sent == Counter({sms_number(i): 1 for i in range(60)})
    called = numbers_sent([s for s in box.sends() if "/voice/" in s["path"]], "/voice/")
    assert called == Counter({sms_number(i): 1 for i in range(8)})
    for run_id in (sms_run, voice_run):
        assert {r.state for r in deliveries(ledger, run_id)} <= DONE_STATES


def test_two_workers_share_an_sms_run_and_a_whatsapp_run_through_the_account_lease(
        make_sandbox, tmp_path: Path, pg_url: str, workers: WorkerPool) -> None:
    box = make_sandbox(sms_price_micro=SANDBOX_PRICES)
    root = tmp_path / "shop"
    sms = sms_project(root, 120, rate="40/s", batch=10, personal_every=0)
    senders = ("s1", "s2", "s3", "s4")
    connect_sessions(box, senders)
    whatsapp = write_text_project(root, 60, rate="5/s", senders=senders, name="lote",
                                  text="Oi {{ nome }}")
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(box, pg_url)
    for _ in range(2):
        workers.start(root, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == 2, 60, "2 live workers", workers)
    sms_run, whatsapp_run = _plan(ledger, sms, box), plan(ledger, whatsapp, box)
    started = time.monotonic()

    first = wait_until(lambda: leases(ledger).get("account"), 30,
                       "a worker to lease the account", workers)
    holders = {first.worker}
    while not (_completed(ledger, sms_run) and _completed(ledger, whatsapp_run)):
        lease = leases(ledger)["account"]
        if lease.expires_at > datetime.now(UTC):
            holders.add(lease.worker)
        assert time.monotonic() - started < 90, "the runs did not complete\n" + workers.output()
        time.sleep(0.2)

    # the account may move when the fair share changes, but only its lease holders send
    # for it: every SMS row was claimed by a worker seen holding the account
    claimed_by = {r.worker for r in deliveries(ledger, sms_run)}
    assert claimed_by and claimed_by <= holders, (claimed_by, holders)
    sent = numbers_sent([s for s in box.sends() if "/sms/" in s["path"]], "/sms/")
    assert sent == Counter({sms_number(i): 1 for i in range(120)})
    assert all(len(s["to"]) <= 10 for s in box.sends() if s["path"].endswith("/sms/bulk"))
    texts = Counter(s["to"] for s in box.sends() if "/messages/" in s["path"])
    assert texts == Counter({sms_number(i): 1 for i in range(60)})
    for run_id in (sms_run, whatsapp_run):
        assert {r.state for r in deliveries(ledger, run_id)} <= DONE_STATES
