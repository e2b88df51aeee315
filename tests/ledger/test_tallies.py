"""Per-run tallies kept by triggers: after every way the program writes deliveries, the
counters equal a scan of the rows, and the counts built on them (status, funnel, report's
sends per minute) equal what the scans gave before; on PostgreSQL two writers of one run
never wait on each other's counters."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, select, text, update
from sqlalchemy.exc import IntegrityError

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger import access
from scheduler.ledger.db import alembic_config, open_ledger
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import plan as pq
from scheduler.ledger.queries import reports as rq
from scheduler.ledger.queries import reruns, tables, tallies
from scheduler.ledger.queries import runs as runq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.engine import dispatcher_for
from tests.factories import T0, FakeClock, Service, make_run, number, plan_rows, start_service
from tests.tracking.support import receipt, received, sent

_BITS = (("accepted_at", 1), ("sent_at", 2), ("delivered_at", 4), ("read_at", 8),
         ("replied_at", 16), ("ended_at", 32))


# --------------------------------------------------------------------------- the scans


def _utc(value: Any) -> datetime:
    """A minute as either database gives it back, as an aware UTC datetime."""
    if isinstance(value, str):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _scan(engine: Engine, run_id: int) -> tuple[Counter, Counter]:
    """(step, state, marks, worker) and send minutes of the run's rows, counted in Python."""
    d = tables.deliveries
    with engine.connect() as conn:
        rows = conn.execute(select(d).where(d.c.run_id == run_id)).mappings().all()
    keys: Counter = Counter()
    minutes: Counter = Counter()
    for r in rows:
        marks = sum(bit for column, bit in _BITS if r[column] is not None)
        if r["reply_text"] is not None:
            marks |= 16
        keys[(r["step"], r["state"], marks, r["worker"] or "")] += 1
        at = r["dispatched_at"] or r["accepted_at"] or r["sent_at"]
        if at is not None:
            minutes[at.astimezone(UTC).replace(second=0, microsecond=0)] += 1
    return keys, minutes


def _kept(engine: Engine, run_id: int) -> tuple[Counter, Counter]:
    """The same, from the counters the triggers kept (summed over shards)."""
    with engine.connect() as conn:
        tally = tallies.read(conn, run_id)
        minutes = tallies.minutes(conn, run_id)
    keys = Counter({(step, state, marks, worker): n
                    for step, state, marks, worker, n in tally.rows})
    return keys, Counter({_utc(at): n for at, n in minutes})


# The statements the tallies replaced, as they were (issue 23): a scan of the run's rows.
_OLD_FUNNEL_COUNTS = """
SELECT COUNT(CASE WHEN state <> 'skipped' THEN 1 END) AS planned,
 COUNT(CASE WHEN state IN ('accepted', 'answered', 'delivered', 'not_answered', 'read',
  'sent', 'undelivered') OR COALESCE(accepted_at, sent_at, delivered_at, read_at) IS NOT NULL
  THEN 1 END) AS sent,
 COUNT(CASE WHEN state IN ('delivered', 'read') OR COALESCE(delivered_at, read_at) IS NOT NULL
  THEN 1 END) AS delivered,
 COUNT(CASE WHEN state = 'read' OR read_at IS NOT NULL THEN 1 END) AS read,
 COUNT(CASE WHEN replied_at IS NOT NULL OR reply_text IS NOT NULL THEN 1 END) AS replied,
 COUNT(CASE WHEN state = 'answered' THEN 1 END) AS answered,
 COUNT(CASE WHEN state = 'undelivered' THEN 1 END) AS undelivered,
 COUNT(CASE WHEN state = 'skipped' THEN 1 END) AS skipped
FROM deliveries WHERE run_id = :run"""
_OLD_TRACKING = """
SELECT COUNT(CASE WHEN sent_at IS NOT NULL OR state IN ('answered', 'delivered',
  'not_answered', 'read', 'sent', 'undelivered') THEN 1 END) AS sent,
 COUNT(CASE WHEN delivered_at IS NOT NULL OR state IN ('delivered', 'read', 'answered')
  THEN 1 END) AS delivered,
 COUNT(CASE WHEN read_at IS NOT NULL OR state = 'read' THEN 1 END) AS read,
 COUNT(CASE WHEN replied_at IS NOT NULL THEN 1 END) AS replied
FROM deliveries WHERE run_id = :run"""
_OLD_STATES = "SELECT state, COUNT(*) FROM deliveries WHERE run_id = :run GROUP BY state"


def check(ledger: Ledger, *run_ids: int) -> None:
    """The counters equal the rows, and every count read from them equals the old scan."""
    for run_id in run_ids:
        assert _kept(ledger.engine, run_id) == _scan(ledger.engine, run_id), run_id
        with access.snapshot(ledger.engine, "compare") as conn:
            params = {"run": run_id}
            assert dq.counts_by_state(conn, run_id) == dict(
                conn.execute(text(_OLD_STATES), params).all())
            old = dict(conn.execute(text(_OLD_FUNNEL_COUNTS), params).mappings().one())
            assert tallies.read(conn, run_id).funnel() == old
            old = dict(conn.execute(text(_OLD_TRACKING), params).mappings().one())
            assert {k: v for k, v in tq.funnel(conn, run_id).as_dict().items()
                    if k != "opted_out"} == old
            frame = rq.send_minutes(conn, run_id)
        _, minutes = _scan(ledger.engine, run_id)
        assert dict(zip(map(_utc, frame["at"]), frame["n"].tolist(), strict=True)) == minutes
        assert str(frame["n"].dtype) == "int64"


# --------------------------------------------------------------------------- the paths


@pytest.fixture
def service(clock: FakeClock) -> Iterator[Service]:
    """A sandbox on the test's clock that fails a third of the sends (500)."""
    svc, server = start_service(clock=clock, fail_rate=0.35, seed=11)
    yield svc
    server.stop()


async def _dispatch(ledger: Ledger, service: Service, run_id: int, clock: FakeClock) -> None:
    options = DispatchOptions(senders=("s1", "s2"), rate=50.0, timezone="America/Sao_Paulo",
                              engine=EngineSettings(send_max_attempts=1))
    async with ServiceClient(service.base_url, service.api_key) as client:
        await dispatcher_for(ledger, client, run_id, options, clock=clock,
                             rng=random.Random(5)).run()


def _ingest(ledger: Ledger, events: list[dict[str, Any]], now: datetime) -> None:
    """Store and apply ``events`` as the receiver does, in one batch."""
    items = [incoming_from(e, json.dumps(e), now) for e in events]
    store_and_apply(TrackingStore(ledger), items, ApplyContext(OptOutWords(["SAIR"])), now)


def _rows(ledger: Ledger, run_id: int) -> list[dict[str, Any]]:
    d = tables.deliveries
    with ledger.engine.connect() as conn:
        return [dict(r) for r in conn.execute(
            select(d).where(d.c.run_id == run_id).order_by(d.c.id)).mappings()]


async def test_the_tallies_follow_every_way_rows_are_written(
        ledger: Ledger, clock: FakeClock, service: Service) -> None:
    await service.connect("s1", "s2")
    # plan: the bulk insert (COPY on PostgreSQL); a skipped row and a second run beside
    run_id = make_run(ledger, 16, steps=2, senders=("s1", "s2"))
    other = make_run(ledger, 5, name="other")
    check(ledger, run_id, other)

    assert ledger.suppress(number(3), source="test")  # its planned rows become skipped
    check(ledger, run_id, other)

    await _dispatch(ledger, service, run_id, clock)  # claims, outcomes, next steps
    states = ledger.counts(run_id)
    assert states.get("accepted") and states.get("failed"), states  # both paths ran
    check(ledger, run_id, other)

    # the receiver: sent, delivered, read and a reply, a minute later
    later = clock() + timedelta(minutes=1)
    accepted = [r for r in _rows(ledger, run_id) if r["state"] == "accepted"]
    events: list[dict[str, Any]] = []
    for i, r in enumerate(accepted):
        events.append(sent(r["to"], r["message_id"].upper(), later, session=r["sender"]))
        if i % 2 == 0:
            events.append(receipt("message.delivered", r["to"], r["message_id"].upper(),
                                  later, session=r["sender"]))
        if i % 4 == 0:
            events.append(receipt("message.read", r["to"], r["message_id"].upper(), later,
                                  session=r["sender"]))
    first = accepted[0]
    events.append(received(first["to"], "obrigado", later + timedelta(seconds=5),
                           session=first["sender"]))
    _ingest(ledger, events, later + timedelta(seconds=10))
    assert ledger.counts(run_id).get("read")
    check(ledger, run_id, other)

    # requeue the failed rows (and the later steps skipped because of them), then cancel
    clock.now += timedelta(minutes=5)
    assert ledger.requeue(run_id, ["failed"]) > 0
    check(ledger, run_id, other)
    assert ledger.request(run_id, "cancel").status == RunStatus.CANCELLED
    assert "planned" not in ledger.counts(run_id)
    check(ledger, run_id, other)

    # re-plan the other run: its unsent rows deleted, a new plan written, repeats dropped
    with access.transaction(ledger.engine, "claim two") as conn:
        due = dq.due_deliveries(conn, other, T0, limit=2)
        dq.claim(conn, [(d.id, "s1") for d in due], T0)
    run = ledger.get_run(other)
    written, dropped = ledger.replan(
        other, [plan_rows(8)], start_at=T0, definition=json.loads(run.definition or "{}"),
        fingerprint="replanned", options=ledger.options(run))
    assert (written, dropped) == (8, 2)
    check(ledger, run_id, other)


def test_a_plan_rolled_back_and_a_deleted_run_leave_no_counts(ledger: Ledger) -> None:
    run_id = ledger.create_run(campaign_name="gone", channel="whatsapp",
                               definition_path="t.toml", definition={"name": "gone"},
                               delivery_mode="at-most-once", timezone="UTC")

    def chunks() -> Iterator[list[dict[str, Any]]]:
        yield plan_rows(10)
        raise RuntimeError("the planner died")

    with pytest.raises(RuntimeError, match="planner died"):
        ledger.store_plan(run_id, chunks(), start_at=T0)
    check(ledger, run_id)
    ledger.release(run_id)  # as the planning command does when its plan failed
    assert ledger.discard_interrupted_plans() == [run_id]
    with ledger.engine.connect() as conn:
        left = conn.execute(text("SELECT COUNT(*) FROM run_tallies WHERE run_id = :r"),
                            {"r": run_id}).scalar()
    assert left == 0

    # a run whose rows were all deleted keeps counters at 0: deleting it takes them along
    emptied = make_run(ledger, 4, name="emptied")
    with access.transaction(ledger.engine, "drop and delete") as conn:
        assert reruns.drop_replaceable_rows(conn, emptied) == 4
        assert dq.counts_by_state(conn, emptied) == {}
        runq.delete_run(conn, emptied)
    with ledger.engine.connect() as conn:
        left = conn.execute(text("SELECT COUNT(*) FROM run_tallies WHERE run_id = :r"),
                            {"r": emptied}).scalar()
    assert left == 0


def test_steps_and_workers_are_counted(ledger: Ledger) -> None:
    run_id = make_run(ledger, 6, steps=2)
    d = tables.deliveries
    with access.transaction(ledger.engine, "claim as two workers") as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=10)
        assert len(due) == 6  # the first steps
        dq.claim(conn, [(r.id, "s1") for r in due], T0)
        conn.execute(update(d).where(d.c.id.in_([r.id for r in due[:2]])).values(worker="w1"))
        conn.execute(update(d).where(d.c.id.in_([r.id for r in due[2:5]])).values(worker="w2"))
    with ledger.engine.connect() as conn:
        assert tallies.read(conn, run_id).steps() == {0: {"dispatching": 6},
                                                      1: {"planned": 6}}
        assert tallies.read(conn, run_id).workers() == {"w1": 2, "w2": 3}
    check(ledger, run_id)


def test_the_migration_counts_the_rows_already_stored_and_goes_back(
        ledger_url: str, clock: FakeClock) -> None:
    engine = open_ledger(ledger_url)
    try:
        config = alembic_config(engine)
        ledger = Ledger(engine, clock=clock)
        run_id = make_run(ledger, 7, steps=2)
        with access.transaction(engine, "send some") as conn:
            due = dq.due_deliveries(conn, run_id, T0, limit=3)
            dq.claim(conn, [(r.id, "s1") for r in due], T0)
        command.downgrade(config, "0009")  # the schema before the tallies, rows kept
        command.upgrade(config, "head")
        check(ledger, run_id)
        assert ledger.counts(run_id) == {"dispatching": 3, "planned": 11}
        command.downgrade(config, "0009")
        with engine.connect() as conn:
            names = set(conn.execute(text(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')"
                if engine.dialect.name == "sqlite" else
                "SELECT tablename FROM pg_tables UNION SELECT tgname FROM pg_trigger"
                " UNION SELECT proname FROM pg_proc")).scalars())
        assert not {n for n in names if n.startswith(("run_tallies", "run_minutes"))}
        command.upgrade(config, "head")
        check(ledger, run_id)
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- PostgreSQL


def test_two_writers_of_one_run_do_not_wait_on_each_other(ledger: Ledger,
                                                          db_backend: str) -> None:
    if db_backend != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    run_id = make_run(ledger, 4)
    ids = [r["id"] for r in _rows(ledger, run_id)]
    d = tables.deliveries
    first, second = ledger.engine.connect(), ledger.engine.connect()
    try:
        for conn in (first, second):
            # a wait for the other's counter row would fail this test instead of hanging
            conn.execute(text("SET LOCAL lock_timeout = '10s'"))
        # the same counters (run, step 0, planned → failed, no times, no worker) in both
        first.execute(update(d).where(d.c.id == ids[0]).values(state="failed"))
        second.execute(update(d).where(d.c.id == ids[1]).values(state="failed"))
        second.execute(update(d).where(d.c.id == ids[2]).values(state="failed"))
        first.commit()
        second.commit()
    finally:
        first.close()
        second.close()
    assert ledger.counts(run_id) == {"failed": 3, "planned": 1}
    with ledger.engine.connect() as conn:
        shards = conn.execute(text("SELECT COUNT(DISTINCT shard) FROM run_tallies "
                                   "WHERE run_id = :r AND state = 'failed'"),
                              {"r": run_id}).scalar()
    assert shards == 2
    check(ledger, run_id)


# --------------------------------------------------------------------------- SQLite bulk

_INSERT_TRIGGERS = ("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                    " AND name LIKE '%_insert' ORDER BY name")


def _insert_triggers(ledger: Ledger) -> list[tuple[str, str]] | None:
    """SQLite's INSERT triggers on deliveries, with their text (None on PostgreSQL)."""
    if ledger.engine.dialect.name != "sqlite":
        return None
    with ledger.engine.connect() as conn:
        return [(str(n), str(q)) for n, q in conn.execute(text(_INSERT_TRIGGERS))]


def test_a_plan_in_chunks_and_a_replan_are_counted_once(ledger: Ledger) -> None:
    triggers = _insert_triggers(ledger)
    assert triggers is None or [n for n, _ in triggers] == [
        "run_minutes_insert", "run_sender_tallies_insert", "run_tallies_insert"]
    # several chunks of two steps, a skipped row, and a run planned before beside
    other = make_run(ledger, 3, name="before")
    run_id = ledger.create_run(campaign_name="bulk", channel="whatsapp",
                               definition_path="t.toml", definition={"name": "bulk"},
                               delivery_mode="at-most-once", timezone="UTC")
    rows = plan_rows(30, steps=2, skip={4})
    assert ledger.store_plan(run_id, [rows[:25], rows[25:50], rows[50:]], start_at=T0) == 60
    assert ledger.counts(run_id) == {"planned": 58, "skipped": 2}
    check(ledger, run_id, other)
    assert _insert_triggers(ledger) == triggers  # back as they were

    # a re-plan: new rows into a run that has some (two claimed rows stay)
    with access.transaction(ledger.engine, "claim two") as conn:
        dq.claim(conn, [(d.id, "s1") for d in dq.due_deliveries(conn, run_id, T0, limit=2)],
                 T0)
    run = ledger.get_run(run_id)
    written, dropped = ledger.replan(
        run_id, [plan_rows(12)[:7], plan_rows(12)[7:]], start_at=T0,
        definition=json.loads(run.definition or "{}"), fingerprint="again",
        options=ledger.options(run))
    assert (written, dropped) == (12, 2)
    assert ledger.counts(run_id) == {"dispatching": 2, "planned": 10}
    check(ledger, run_id, other)
    assert _insert_triggers(ledger) == triggers

    # rows inserted some other way are still counted by the triggers
    with access.transaction(ledger.engine, "copy rows") as conn:
        conn.execute(text(
            'INSERT INTO deliveries (run_id, seq, "row", step, kind, path, "to", payload,'
            ' variables, state, attempts, sent_at) SELECT run_id, seq + 100, "row", step,'
            ' kind, path, "to", payload, variables, \'sent\', attempts, :at FROM deliveries'
            " WHERE run_id = :r AND state = 'planned'"), {"r": other, "at": T0})
    check(ledger, run_id, other)


def test_a_plan_the_database_refuses_midway_leaves_nothing(ledger: Ledger) -> None:
    triggers = _insert_triggers(ledger)
    run_id = ledger.create_run(campaign_name="refused", channel="whatsapp",
                               definition_path="t.toml", definition={"name": "refused"},
                               delivery_mode="at-most-once", timezone="UTC")
    bad = plan_rows(6)
    bad[-1].update(to=None, state="skipped", reason="duplicate")  # NOT NULL, last of chunk 2
    with pytest.raises(LedgerError, match=r"(?i)null"):
        ledger.store_plan(run_id, [plan_rows(5), bad], start_at=T0)
    with ledger.engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM deliveries WHERE run_id = :r"),
                            {"r": run_id}).scalar() == 0
        assert conn.execute(text("SELECT COUNT(*) FROM run_tallies WHERE run_id = :r"),
                            {"r": run_id}).scalar() == 0
    assert _insert_triggers(ledger) == triggers
    assert ledger.store_plan(run_id, [plan_rows(4)], start_at=T0) == 4
    check(ledger, run_id)


def test_an_insert_that_fails_part_way_is_counted_if_committed(ledger: Ledger) -> None:
    if ledger.engine.dialect.name != "sqlite":
        pytest.skip("the grouped count of the plan's insert is SQLite's")
    triggers = _insert_triggers(ledger)
    run_id = make_run(ledger, 2)
    bad = plan_rows(6)
    bad[-1].update(to=None, state="skipped", reason="duplicate")
    # a caller that commits what was written
    with ledger.engine.begin() as conn, pytest.raises(IntegrityError, match=r"(?i)null"):
        pq.insert_deliveries(conn, run_id, bad, first_seq=10, start_at=T0)
    assert ledger.counts(run_id) == {"planned": 7}  # 2 made + 5 before the refused row
    check(ledger, run_id)
    assert _insert_triggers(ledger) == triggers
