"""A run's view against the ledger it reads: after a real run through the sandbox its
numbers are the ledger's own (counted here by scanning the rows), and it is read in one
snapshot (a change committed by another connection while it reads is in all of it or in
none of it). SQLite and PostgreSQL."""

from __future__ import annotations

import random
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger import access
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tables, tallies
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import SENT_STATES, RunStatus
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from scheduler.settings.load import Settings
from scheduler.views.overview import read_overview
from scheduler.views.run_view import read_run_view
from tests.engine import dispatcher_for
from tests.factories import FakeClock, make_run


def rows_of(ledger: Ledger, run_id: int) -> list[dict[str, Any]]:
    """Every row of the run, read plainly (what the view must agree with)."""
    d = tables.deliveries
    with ledger.engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(d).where(d.c.run_id == run_id))
                .mappings()]


async def test_the_view_counts_what_the_ledger_holds_after_a_real_run(
        ledger: Ledger, clock: FakeClock, settings: Settings, service_factory: Any) -> None:
    service = service_factory(clock=clock, fail_rate=0.3, seed=11)
    await service.connect("s1", "s2")
    run_id = make_run(ledger, 40, steps=2, senders=("s1", "s2"))

    def pause_midway(counts: dict[str, int]) -> None:
        if counts.get("accepted", 0) + counts.get("failed", 0) >= 45:
            ledger.request(run_id, "pause")

    options = DispatchOptions(senders=("s1", "s2"), rate=2.0, timezone="America/Sao_Paulo",
                              engine=EngineSettings(send_max_attempts=1,
                                                    sender_failure_threshold=1000),
                              step_delays_s=(0.0, 0.0))
    async with ServiceClient(service.base_url, service.api_key) as client:
        result = await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                      rng=random.Random(3), on_progress=pause_midway).run()
    assert result.status == RunStatus.PAUSED
    now = clock() + timedelta(seconds=30)
    view = read_run_view(ledger, run_id, settings=settings, now=now)

    rows = rows_of(ledger, run_id)
    states = Counter(r["state"] for r in rows)
    assert {"accepted", "failed", "planned"} <= set(states)  # a mixed run
    assert view.counts == dict(states)
    sent = sum(n for s, n in states.items() if s in SENT_STATES)
    planned = len(rows) - states["skipped"]  # a failed first step skips the second
    assert view.funnel.counts["planned"] == planned and view.funnel.counts["sent"] == sent
    assert view.funnel.line.startswith(f"planned {planned} · sent {sent} (")
    for step in view.funnel.steps:
        mine = [r for r in rows if r["step"] == step.step and r["state"] != "skipped"]
        assert (step.planned, step.sent, step.failed) == (
            len(mine), sum(r["state"] in SENT_STATES for r in mine),
            sum(r["state"] == "failed" for r in mine))
    assert [s.step for s in view.funnel.steps] == [0, 1]
    assert (view.progress.total, view.progress.remaining) == (planned, states["planned"])
    assert view.progress.done == planned - states["planned"]
    sends = [r for r in rows if r["dispatched_at"] is not None and r["state"] != "planned"]
    assert view.last_send_at == max(r["dispatched_at"] for r in sends)
    recent = Counter(r["sender"] for r in sends if r["dispatched_at"] >= now - timedelta(
        minutes=5))
    assert {p.sender: p.recent for p in view.pace if p.recent} == dict(recent)
    failed = Counter(r["last_error"] for r in rows if r["state"] == "failed")
    assert {e.message: e.n for e in view.errors} == dict(failed)
    assert [w.kind for w in view.waits] == ["paused"] and not view.stuck.stuck
    assert view.run.status == "paused" and view.run.timezone == "America/Sao_Paulo"

    overview = read_overview(ledger, settings=settings, now=now)
    [summary] = overview.runs
    assert (summary.id, summary.counts, summary.total, summary.done) == (
        run_id, dict(states), planned, planned - states["planned"])
    assert overview.by_status == {"paused": 1}
    assert overview.sends_today == len(sends)


def test_a_write_committed_while_the_view_reads_is_in_none_of_it(
        ledger: Ledger, clock: FakeClock, settings: Settings, monkeypatch: Any) -> None:
    run_id = make_run(ledger, 10)
    now = clock()

    def send_five() -> None:  # another process would: its own connection, committed
        with access.transaction(ledger.engine, "claim five rows") as conn:
            due = dq.due_deliveries(conn, run_id, now, limit=5)
            dq.claim(conn, [(row.id, "s1") for row in due], now)
        with access.transaction(ledger.engine, "record five sends") as conn:
            dq.record_accepted(conn, [(row.id, f"m{row.id}") for row in due], now)

    real_read = tallies.read
    reads: list[int] = []

    def read_then_write(conn: Any, rid: int) -> Any:
        found = real_read(conn, rid)
        if not reads:  # after the view's first read, before its others
            writer = threading.Thread(target=send_five)
            writer.start()
            writer.join()
        reads.append(rid)
        return found

    monkeypatch.setattr(tallies, "read", read_then_write)
    view = read_run_view(ledger, run_id, settings=settings, now=now)
    assert reads == [run_id]  # read once: the view's later reads (senders, pace) follow it
    monkeypatch.undo()

    after = read_run_view(ledger, run_id, settings=settings, now=now)
    assert after.counts == {"planned": 5, "accepted": 5}  # the write was committed...
    assert after.funnel.counts["sent"] == 5 and after.last_send_at == now
    # ...and the view read meanwhile holds none of it: counts, funnel, progress, pace
    assert view.counts == {"planned": 10}
    assert view.funnel.counts["sent"] == 0 and view.progress.done == 0
    assert view.last_send_at is None and all(p.recent == 0 for p in view.pace)
    assert view.version != after.version
