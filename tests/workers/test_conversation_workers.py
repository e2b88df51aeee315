"""A conversation shared by two ``campaign serve`` workers (separate processes, one
PostgreSQL ledger, one sandbox whose recipients answer as scripted): each recipient gets
exactly the branch their reply chose, once, whichever worker decided it (two stores racing
for one decision, one writing it, are in ``tests/conversation/test_decision_store.py``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from tests.conversation.support import (
    KINDS,
    PEOPLE,
    kind_of,
    messages_by_number,
    reply_script,
    write_project,
)
from tests.recycling.support import number
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    live_worker_ids,
    plan,
    wait_until,
    worker_env,
)

SENDERS = ("s1", "s2")


def test_two_workers_send_each_recipient_their_branch_once(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    sandbox = make_sandbox(recipient_delay_ms=(20, 40), whatsapp_replies_by_number=reply_script())
    connect_sessions(sandbox, SENDERS)
    campaign = write_project(tmp_path, SENDERS)
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(sandbox, pg_url)
    for _ in range(2):
        workers.start(tmp_path, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == 2, 60, "2 live workers", workers)
    run_id = plan(ledger, campaign, sandbox)
    wait_until(lambda: ledger.get_run(run_id).status == "completed", 120,
               "the run to complete", workers)
    got = messages_by_number(sandbox.sends())
    for i in range(PEOPLE):
        assert got[number(i)] == Counter(KINDS[kind_of(i)][1]), (i, got[number(i)])
    by_sender: dict[str, set[str]] = {}
    for send in sandbox.sends():  # one conversation, one sender
        by_sender.setdefault(send["to"], set()).add(send["sessionId"])
    assert all(len(s) == 1 for s in by_sender.values()), by_sender
