"""An A/B test shared by three ``campaign serve`` workers (separate processes, one
PostgreSQL ledger, one sandbox): each recipient gets the variant drawn for them or the
winner, nobody twice, and the rest one winner (two stores racing for the decision, one
taking it, are in ``tests/ledger/test_experiments.py``)."""

from __future__ import annotations

from pathlib import Path

from scheduler.experiments.exact import exact_split
from scheduler.ledger import access
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import SENT_STATES
from scheduler.sandbox.testing import write_text_project
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    deliveries,
    live_worker_ids,
    plan,
    sends_by_recipient,
    wait_until,
    worker_env,
)

SENDERS = ("s1", "s2", "s3")
N = 120
STEPS = ('[[steps]]\ntype = "text"\nvariants = [{name = "A", text = "Oi {{ nome }} [A]"}, '
         '{name = "B", text = "Olá {{ nome }} [B]"}]\n'
         '[experiment]\ntest_share = "40%"\nwait = "1s"\nmin_per_variant = 0\n')


def test_workers_share_a_test_and_decide_it_once(tmp_path: Path, pg_url: str, make_sandbox,
                                                 workers: WorkerPool) -> None:
    sandbox = make_sandbox()
    connect_sessions(sandbox, SENDERS)
    campaign = write_text_project(tmp_path, N, rate="20/s", senders=SENDERS, name="ab",
                                  text="x")
    text = campaign.read_text()
    campaign.write_text(text[:text.index("[[steps]]")] + STEPS)
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(sandbox, pg_url)
    for _ in range(3):
        workers.start(tmp_path, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == 3, 60, "3 live workers", workers)
    run_id = plan(ledger, campaign, sandbox)
    wait_until(lambda: ledger.get_run(run_id).status == "completed", 90,
               "the run to complete", workers)

    with access.read(ledger.engine, "test") as conn:
        experiment = xq.read(conn, run_id)
    assert experiment is not None and experiment.goes in ("A", "B")
    rows = deliveries(ledger, run_id)
    assert len(rows) == N and all(r.state in SENT_STATES for r in rows)
    sent = sends_by_recipient(sandbox)
    assert len(sent) == N and max(sent.values()) == 1  # nobody twice
    split = exact_split("ab", [r.to for r in rows], 0.4, [("A", 1), ("B", 1)])
    for send in sandbox.sends():
        to = str(send["to"])
        planned, in_test = split.assign(to)
        expected = planned if in_test else experiment.goes
        assert f"[{expected}]" in str(send.get("body", send))
    assert experiment.decided_at is not None and experiment.decision is not None
    rest = [r for r in rows if not split.assign(r.to)[1]]
    assert len(rest) == N - 48  # 40% of 120 in the test, counted
    assert rest and {r.variant for r in rest} == {experiment.goes}  # one winner, released
    assert len({r.worker for r in rows}) >= 2  # the workers shared the run
    ledger.close()
