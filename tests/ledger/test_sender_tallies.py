"""Per-(run, sender) tallies kept by triggers (issue 32): after every way the program
writes deliveries (plan, claims, sends, failures, retries, receipts and replies, a sender
changed, a resend, a fallback, a cancel, a re-plan's deletes, a run deleted) the counters
give exactly what the ``GROUP BY`` over the run's rows gave ``campaign status --json``;
the migration counts the rows already stored and goes back; on PostgreSQL two writers
keep their own shards."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from alembic import command
from sqlalchemy import and_, case, func, select, text, update

from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.recycle.verdicts import Fallback, Retry
from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.db import alembic_config, open_ledger
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import reruns, sender_tallies, tallies
from scheduler.ledger.queries import run_senders as rsq
from scheduler.ledger.queries import runs as runq
from scheduler.ledger.queries.tables import deliveries, replies
from scheduler.ledger.recycling_store import RecyclingStore
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import SENT_STATES, RunStatus
from scheduler.ledger.states import DeliveryState as S
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

# --------------------------------------------------------------------------- the scan


def _group_by(conn: Connection, run_ids: list[int]
              ) -> tuple[dict[tuple[int, str], Any], dict[tuple[int, str], int]]:
    """What ``campaign status --json`` counted before issue 32: a ``GROUP BY`` over the
    runs' rows that went through a sender, and their opt-out replies (as it was)."""
    d, r = deliveries.c, replies.c
    mine = and_(d.run_id.in_(run_ids), d.sender.is_not(None), d.sender != "")
    rows = conn.execute(
        select(d.run_id, d.sender,
               func.sum(case((d.state.in_([str(s) for s in SENT_STATES]), 1), else_=0)),
               func.sum(case((d.state == S.FAILED, 1), else_=0)),
               func.sum(case((d.state == S.UNKNOWN, 1), else_=0)),
               func.sum(case((d.replied_at.is_not(None), 1), else_=0)))
        .where(mine, d.state != S.PLANNED).group_by(d.run_id, d.sender))
    counts = {(int(run), str(sender)): rsq.RunSenderCounts(
        int(s or 0), int(f or 0), int(u or 0), int(rp or 0))
        for run, sender, s, f, u, rp in rows}
    opted = conn.execute(
        select(d.run_id, d.sender, func.count(func.distinct(r.delivery_id)))
        .select_from(replies.join(deliveries, d.id == r.delivery_id))
        .where(mine, r.opt_out.is_(True)).group_by(d.run_id, d.sender))
    return counts, {(int(run), str(sender)): int(n) for run, sender, n in opted}


def check(ledger: Ledger, *run_ids: int) -> dict[tuple[int, str], Any]:
    """The kept counters give what the ``GROUP BY`` gives, run by run and together; what
    ``campaign status --json`` reads (:func:`rsq.run_sender_counts`) is what it was."""
    with access.snapshot(ledger.engine, "compare") as conn:
        for ids in [[run_id] for run_id in run_ids] + [list(run_ids)]:
            counts, opted = _group_by(conn, ids)
            kept = {key: rsq.RunSenderCounts(c["sent"], c["failed"], c["unknown"],
                                             c["replies"])
                    for key, c in sender_tallies.read(conn, ids).items()}
            assert kept == counts, ids
            before = dict(counts)
            for key, n in opted.items():
                before[key] = before.get(key, rsq.RunSenderCounts())._replace(opt_outs=n)
            together = rsq.run_sender_counts(conn, ids)
            assert together == before, ids
        if conn.dialect.name == "sqlite":  # one shard: no counter is ever below 0
            assert conn.execute(text("SELECT COUNT(*) FROM run_sender_tallies "
                                     "WHERE n < 0")).scalar() == 0
    return together


# --------------------------------------------------------------------------- the paths


@pytest.fixture
def service(clock: FakeClock) -> Iterator[Service]:
    """A sandbox on the test's clock that fails a third of the sends (500)."""
    svc, server = start_service(clock=clock, fail_rate=0.35, seed=7)
    yield svc
    server.stop()


async def _dispatch(ledger: Ledger, service: Service, run_id: int, clock: FakeClock,
                    senders: tuple[str, ...]) -> None:
    options = DispatchOptions(senders=senders, rate=50.0, timezone="America/Sao_Paulo",
                              engine=EngineSettings(send_max_attempts=2))
    async with ServiceClient(service.base_url, service.api_key) as client:
        await dispatcher_for(ledger, client, run_id, options, clock=clock,
                             rng=random.Random(3)).run()


def _rows(ledger: Ledger, run_id: int) -> list[dict[str, Any]]:
    with ledger.engine.connect() as conn:
        return [dict(r) for r in conn.execute(
            select(deliveries).where(deliveries.c.run_id == run_id)
            .order_by(deliveries.c.id)).mappings()]


def _ingest(ledger: Ledger, events: list[dict[str, Any]], at: Any) -> None:
    items = [incoming_from(e, json.dumps(e), at) for e in events]
    store_and_apply(TrackingStore(ledger), items, ApplyContext(OptOutWords(["SAIR"])), at)


async def test_the_kept_counts_equal_the_group_by_after_every_way_rows_change(
        ledger: Ledger, clock: FakeClock, service: Service) -> None:
    await service.connect("s1", "s2", "s3")
    run_id = make_run(ledger, 20, steps=2, senders=("s1", "s2"))  # the bulk insert
    other = make_run(ledger, 6, name="other", senders=("s1",))
    assert check(ledger, run_id, other) == {}  # planned rows went through no sender
    assert ledger.suppress(number(3), source="test")  # planned rows become skipped
    check(ledger, run_id, other)

    # claims, sends, failures (a third refused), retries, the next steps released
    await _dispatch(ledger, service, run_id, clock, ("s1", "s2"))
    counts = ledger.counts(run_id)
    assert counts.get("accepted") and counts.get("failed"), counts
    found = check(ledger, run_id, other)
    assert {s for _r, s in found} == {"s1", "s2"}

    # the receiver: sent, delivered, read, a reply and an opt-out
    later = clock() + timedelta(minutes=1)
    accepted = [r for r in _rows(ledger, run_id) if r["state"] == "accepted"]
    events: list[dict[str, Any]] = []
    for i, r in enumerate(accepted):
        mid = r["message_id"].upper()
        events.append(sent(r["to"], mid, later, session=r["sender"]))
        if i % 2 == 0:
            events.append(receipt("message.delivered", r["to"], mid, later,
                                  session=r["sender"]))
        if i % 3 == 0:
            events.append(receipt("message.read", r["to"], mid, later, session=r["sender"]))
    two = list({r["to"]: r for r in accepted}.values())[:2]  # two recipients
    events.append(received(two[0]["to"], "obrigado", later + timedelta(seconds=5),
                           session=two[0]["sender"]))
    events.append(received(two[1]["to"], "SAIR", later + timedelta(seconds=6),
                           session=two[1]["sender"]))
    _ingest(ledger, events, later + timedelta(seconds=10))
    found = check(ledger, run_id, other)
    assert sum(c.replies for c in found.values()) >= 2
    assert sum(c.opt_outs for c in found.values()) == 1

    # a sender changed on sent rows (s1's rows to s3, one to no sender, one to ''), an
    # unknown row, and planned rows' pins dropped
    rows = _rows(ledger, run_id)
    moved = [r["id"] for r in rows if r["sender"] == "s1" and r["state"] != "planned"][:3]
    with access.transaction(ledger.engine, "move senders") as conn:
        conn.execute(update(deliveries).where(deliveries.c.id == moved[0])
                     .values(sender="s3"))
        conn.execute(update(deliveries).where(deliveries.c.id == moved[1])
                     .values(sender=None))
        conn.execute(update(deliveries).where(deliveries.c.id == moved[2])
                     .values(sender="", state=S.UNKNOWN))
        conn.execute(update(deliveries).where(
            deliveries.c.run_id == run_id, deliveries.c.state == S.ACCEPTED,
            deliveries.c.sender == "s2").values(state=S.UNKNOWN, replied_at=later))
        reruns.unpin_removed_senders(conn, run_id, ["s2"])
    found = check(ledger, run_id, other)
    assert found[(run_id, "s3")].sent + found[(run_id, "s3")].failed == 1

    # resend: the failed rows back to planned and sent again through other senders
    clock.now += timedelta(minutes=5)
    assert ledger.requeue(run_id, ["failed"]) > 0
    check(ledger, run_id, other)
    await _dispatch(ledger, service, run_id, clock, ("s2", "s3"))
    check(ledger, run_id, other)

    # failed rows requeued again, then the run cancelled (its planned rows, some pinned
    # to their recipient's sender, settle); the other run re-planned (its unsent rows
    # deleted, two claimed rows kept)
    if ledger.counts(run_id).get("failed"):
        assert ledger.requeue(run_id, ["failed"]) > 0
    else:
        ledger.requeue(run_id, ["accepted"])
    assert ledger.counts(run_id).get("planned")
    assert ledger.request(run_id, "cancel").status == RunStatus.CANCELLED
    with access.transaction(ledger.engine, "claim two") as conn:
        due = dq.due_deliveries(conn, other, T0, limit=2)
        dq.claim(conn, [(d.id, "s1") for d in due], T0)
    run = ledger.get_run(other)
    written, dropped = ledger.replan(
        other, [plan_rows(8)], start_at=T0, definition=json.loads(run.definition or "{}"),
        fingerprint="replanned", options=ledger.options(run))
    assert (written, dropped) == (8, 2)
    assert check(ledger, run_id, other)[(other, "s1")] == rsq.RunSenderCounts()  # 2 claimed

    # rows deleted; a run emptied, then deleted (only an empty run is): its counters go
    with access.transaction(ledger.engine, "delete") as conn:
        conn.execute(deliveries.delete().where(deliveries.c.id.in_(moved)))
    check(ledger, run_id, other)
    with access.transaction(ledger.engine, "empty the run") as conn:
        conn.execute(deliveries.delete().where(deliveries.c.run_id == other))
    assert (other, "s1") not in check(ledger, run_id, other)
    with access.transaction(ledger.engine, "delete the run") as conn:
        runq.delete_run(conn, other)
    check(ledger, run_id, other)
    with ledger.engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM run_sender_tallies WHERE run_id = :r"),
                            {"r": other}).scalar() == 0


def _voice_rows(n: int) -> list[dict[str, Any]]:
    return [{"row": i + 1, "to": number(i), "step": 0, "kind": "voice",
             "path": "/api/v1/voice/calls", "payload": {"audioUrl": f"https://a/{i}.mp3"},
             "variables": {}, "region": "BR", "state": "planned", "reason": None,
             "watch": 1, "fallback": {"kind": "sms", "path": "/api/v1/sms/send",
                                      "payload": {"to": number(i), "text": "Olá"}}}
            for i in range(n)]


def test_a_retry_and_a_fallback_are_counted_when_sent(ledger: Ledger) -> None:
    run_id = ledger.create_run(campaign_name="dial", channel="voice", definition_path="d",
                               definition={}, delivery_mode="at-most-once",
                               timezone="America/Sao_Paulo")
    ledger.store_plan(run_id, [_voice_rows(3)], start_at=T0)
    ended = T0 + timedelta(minutes=2)
    with access.transaction(ledger.engine, "call") as conn:
        due = dq.due_deliveries(conn, run_id, T0 + timedelta(days=1), limit=10)
        dq.claim(conn, [(r.id, "account") for r in due], T0)
        conn.execute(update(deliveries).where(deliveries.c.run_id == run_id)
                     .values(state=S.NOT_ANSWERED, ended_at=ended))
    check(ledger, run_id)
    child = ledger.create_fallback_run(run_id, "sms", "{}")
    store = RecyclingStore(ledger, run_id)
    rows = store.watched(ended)
    store.recycle(ended, [(rows[0], Retry("no_answer", 2, ended, "again")),
                          (rows[1], Fallback(2, "sms", "6h"))])
    found = check(ledger, run_id, child)
    assert found == {(run_id, "account"): rsq.RunSenderCounts(sent=3)}
    with access.transaction(ledger.engine, "send the new attempts") as conn:
        for run in (run_id, child):
            due = dq.due_deliveries(conn, run, ended + timedelta(days=1), limit=10)
            dq.claim(conn, [(r.id, "sms1" if run == child else "account") for r in due],
                     ended)
    found = check(ledger, run_id, child)
    assert found[(child, "sms1")] == rsq.RunSenderCounts()  # dispatching: listed, no figure


def test_a_bulk_insert_with_senders_is_counted_once(ledger: Ledger) -> None:
    if ledger.engine.dialect.name != "sqlite":
        pytest.skip("the grouped count of a bulk insert is SQLite's")
    run_id = make_run(ledger, 4)
    with ledger.engine.connect() as conn:
        names = {n for (n,) in conn.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"))}
    assert sender_tallies.INSERT_TRIGGER in names
    copy = text(
        'INSERT INTO deliveries (run_id, seq, "row", step, kind, path, "to", payload,'
        ' variables, state, attempts, sender, replied_at) SELECT run_id, seq + :k, "row",'
        " step, kind, path, \"to\", payload, variables, :state, 1, :sender, :replied"
        " FROM deliveries WHERE run_id = :r AND state = 'planned' AND seq < 4")
    with ledger.engine.begin() as conn:
        for k, (state, sender, replied) in enumerate(
                [("read", "s1", T0), ("failed", "s2", None), ("unknown", "", None),
                 ("planned", "s1", None), ("expired", "s4", None)]):
            params = {"k": 10 * (k + 1), "state": state, "sender": sender,
                      "replied": replied, "r": run_id}
            tallies.count_bulk_insert(conn, run_id, partial(conn.execute, copy, params))
    found = check(ledger, run_id)
    assert found == {(run_id, "s1"): rsq.RunSenderCounts(sent=4, replies=4),
                     (run_id, "s2"): rsq.RunSenderCounts(failed=4),
                     (run_id, "s4"): rsq.RunSenderCounts()}
    with ledger.engine.connect() as conn:
        after = {n for (n,) in conn.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"))}
    assert after == names  # put back


# --------------------------------------------------------------------------- migration


def test_the_migration_counts_the_rows_already_stored_and_goes_back(
        ledger_url: str, clock: FakeClock) -> None:
    engine = open_ledger(ledger_url)
    try:
        config = alembic_config(engine)
        ledger = Ledger(engine, clock=clock)
        run_id = make_run(ledger, 9, steps=2, senders=("s1", "s2"))
        other = make_run(ledger, 3, name="other")
        with access.transaction(engine, "send some") as conn:
            due = dq.due_deliveries(conn, run_id, T0, limit=8)
            dq.claim(conn, [(r.id, f"s{i % 3 + 1}") for i, r in enumerate(due)], T0)
            ids = [r.id for r in due]
            for state, chosen in ((S.READ, ids[:3]), (S.FAILED, ids[3:5]),
                                  (S.UNKNOWN, ids[5:6])):
                conn.execute(update(deliveries).where(deliveries.c.id.in_(chosen))
                             .values(state=state))
            conn.execute(update(deliveries).where(deliveries.c.id == ids[0])
                         .values(replied_at=T0))
        expected = check(ledger, run_id, other)
        command.downgrade(config, "0013")  # the schema before, rows kept
        with engine.connect() as conn:
            names = set(conn.execute(text(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')"
                if engine.dialect.name == "sqlite" else
                "SELECT tablename FROM pg_tables UNION SELECT tgname FROM pg_trigger"
                " UNION SELECT proname FROM pg_proc")).scalars())
        assert not {n for n in names if n.startswith("run_sender_tallies")}
        with access.transaction(engine, "change rows while no trigger counts") as conn:
            conn.execute(update(deliveries).where(deliveries.c.id == ids[6])
                         .values(state=S.ACCEPTED))
        command.upgrade(config, "head")  # the backfill
        found = check(ledger, run_id, other)
        assert found != expected and len(found) == 3
        assert found[(run_id, "s1")].sent + found[(run_id, "s2")].sent + found[
            (run_id, "s3")].sent == 4
        with access.transaction(engine, "send after") as conn:  # the triggers are back
            conn.execute(update(deliveries).where(deliveries.c.id == ids[7])
                         .values(state=S.DELIVERED))
        check(ledger, run_id, other)
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- PostgreSQL


def test_two_writers_keep_their_own_shards(ledger: Ledger, db_backend: str) -> None:
    if db_backend != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    run_id = make_run(ledger, 4)
    ids = [r["id"] for r in _rows(ledger, run_id)]
    first, second = ledger.engine.connect(), ledger.engine.connect()
    try:
        for conn in (first, second):
            # a wait for the other's counter row would fail this test instead of hanging
            conn.execute(text("SET LOCAL lock_timeout = '10s'"))
        first.execute(update(deliveries).where(deliveries.c.id == ids[0])
                      .values(state=S.SENT, sender="s1"))
        second.execute(update(deliveries).where(deliveries.c.id.in_(ids[1:3]))
                       .values(state=S.SENT, sender="s1"))
        first.commit()
        second.commit()
    finally:
        first.close()
        second.close()
    assert check(ledger, run_id) == {(run_id, "s1"): rsq.RunSenderCounts(sent=3)}
    with ledger.engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(DISTINCT shard) FROM run_sender_tallies "
                                 "WHERE run_id = :r"), {"r": run_id}).scalar() == 2
