"""A sender taken over from a worker killed mid-send: its rows in doubt wait for their proof
(they stay ``dispatching`` until their grace ends), and the sender's other rows, different
recipients, go out at once meanwhile; nobody is sent anything twice (PostgreSQL, two
``campaign serve`` processes, the sandbox answering every request 0.3-0.5 s late so that a
kill always catches sends in flight)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries.tables import deliveries as D
from scheduler.ledger.runs import Ledger
from scheduler.sandbox.testing import text_project_phone, write_text_project
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    leases,
    live_worker_ids,
    plan,
    send_times,
    sends_by_recipient,
    wait_until,
    worker_env,
)


def _in_flight(ledger: Ledger, run_id: int, worker: str) -> list[tuple[int, str, object]]:
    """(id, recipient, due_at) of the run's rows ``worker`` left ``dispatching``."""
    with access.read(ledger.engine) as conn:
        return [tuple(r) for r in conn.execute(
            select(D.c.id, D.c.to, D.c.due_at).where(
                D.c.run_id == run_id, D.c.worker == worker, D.c.state == "dispatching"))]


def test_a_taken_over_sender_sends_its_other_rows_while_its_rows_in_doubt_await_proof(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    # the first webhook retry comes after 60 s: no proof can arrive during the test
    sandbox = make_sandbox(latency_ms=(300.0, 500.0), webhook_retry_base_s=60.0)
    connect_sessions(sandbox, ("s1",))
    campaign = write_text_project(tmp_path, 60, rate="4/s", senders=("s1",), name="lote",
                                  text="Oi {{ nome }}")
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(sandbox, pg_url)
    env["CAMPAIGN_VERIFY_GRACE_S"] = "120"  # rows in doubt wait that long for their proof
    for _ in range(2):
        workers.start(tmp_path, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == 2, 60, "2 live workers", workers)
    run_id = plan(ledger, campaign, sandbox)
    wait_until(lambda: len(sandbox.sends()) >= 4, 60, "the first sends", workers)

    holder = str(leases(ledger)["s1"].worker)
    wait_until(lambda: _in_flight(ledger, run_id, holder), 30, "a send in flight", workers)
    workers.kill(int(holder.split(":")[1]))
    killed_at = datetime.now(UTC)
    in_doubt = wait_until(lambda: _in_flight(ledger, run_id, holder), 10, "rows in doubt")

    # the survivor takes s1 and sends other rows through it (a row in doubt is a send the
    # dead worker made: the sandbox may have taken it, stamped after the kill)
    doubted = {to for _id, to, _due in in_doubt}
    later = lambda: [t for t in send_times(sandbox)["s1"] if t > killed_at]  # noqa: E731
    wait_until(lambda: len(later()) >= 10, 60, "10 sends through s1 after the kill", workers)
    assert str(leases(ledger)["s1"].worker) != holder

    # ... while every row in doubt still waits for its proof, not sent again
    rows = _in_flight(ledger, run_id, holder)
    assert {i for i, _to, _due in rows} == {i for i, _to, _due in in_doubt}
    assert all(due is not None for _i, _to, due in rows)  # being verified until its grace
    sent = sends_by_recipient(sandbox)
    assert max(sent.values()) == 1  # nobody twice
    assert all(sent.get(to, 0) <= 1 for to in doubted)
    numbers = {"55" + text_project_phone(i) for i in range(60)}
    assert doubted <= numbers
    ledger.close()
