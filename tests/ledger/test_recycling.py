"""Second chances in the ledger (issue 25): the plan stores what is watched and each
recipient's fallback step; the rows awaiting a verdict are read through their index; a
verdict is written once, whatever the repeats and the workers, as one attempt row in the
run or one fallback row in the child run; the counters stay equal to the rows; migration
0013 goes down and up with rows in it; a fallback run lives and dies with its parent."""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from scheduler.dispatch.recycle.verdicts import Fallback, Final, Retry, Verdict, Wait
from scheduler.ledger import access
from scheduler.ledger.db import alembic_config, open_ledger
from scheduler.ledger.exceptions import LedgerError, RunStateError
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import recycling as recq
from scheduler.ledger.queries import tallies
from scheduler.ledger.queries.tables import deliveries, runs
from scheduler.ledger.recycling_store import RecyclingStore, to_write
from scheduler.ledger.rows import WatchedRow
from scheduler.ledger.run_store import RunControlStore
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from scheduler.ledger.states import RunStatus
from tests.factories import T0, FakeClock, number

SMS = {"kind": "sms", "path": "/api/v1/sms/send"}
LANDLINE = {"none": "landline: SMS needs a mobile number"}
CALLED = T0 + timedelta(minutes=1)
ENDED = T0 + timedelta(minutes=2)
_BITS = (("accepted_at", 1), ("sent_at", 2), ("delivered_at", 4), ("read_at", 8),
         ("replied_at", 16), ("ended_at", 32))


def _rows(n: int, *, landline: int | None = None) -> list[dict[str, Any]]:
    """Voice rows, all watched; each with its SMS fallback (row ``landline``: none)."""
    return [{"row": i + 1, "to": number(i), "step": 0, "kind": "voice",
             "path": "/api/v1/voice/calls", "payload": {"audioUrl": f"https://a/{i}.mp3"},
             "variables": {"nome": f"Ana {i}"}, "region": "BR", "state": "planned",
             "reason": None, "watch": 1,
             "fallback": LANDLINE if i == landline else
             {**SMS, "payload": {"to": number(i), "text": f"Olá Ana {i}"}}}
            for i in range(n)]


def _run(ledger: Ledger, n: int = 4, **kw: Any) -> int:
    run_id = ledger.create_run(campaign_name="dial", channel="voice", definition_path="d",
                               definition={}, delivery_mode="at-most-once",
                               timezone="America/Sao_Paulo")
    ledger.store_plan(run_id, [_rows(n, **kw)], start_at=T0)
    return run_id


def _call(ledger: Ledger, run_id: int, outcome: str = S.NOT_ANSWERED,
          cause: int = 19) -> list[WatchedRow]:
    """Claim the run's due rows and end their calls with ``outcome``; the watched rows."""
    with access.transaction(ledger.engine, "call") as conn:
        due = dq.due_deliveries(conn, run_id, T0 + timedelta(days=30), limit=100)
        dq.claim(conn, [(r.id, "account") for r in due], CALLED)
        conn.execute(update(deliveries).where(deliveries.c.run_id == run_id,
                                              deliveries.c.state == S.DISPATCHING)
                     .values(state=outcome, ended_at=ENDED, details=json.dumps(
                         {"cause": cause, "talkSeconds": 0})))
    return RecyclingStore(ledger, run_id).watched(ENDED)


def _all(ledger: Ledger, run_id: int) -> list[dict[str, Any]]:
    with access.read(ledger.engine, "rows") as conn:
        return [dict(r) for r in conn.execute(
            select(deliveries).where(deliveries.c.run_id == run_id)
            .order_by(deliveries.c.id)).mappings()]


def _retry(row: WatchedRow, hours: int = 2) -> Retry:
    return Retry("no_answer", row.attempt + 1, ENDED + timedelta(hours=hours),
                 f"not answered: attempt {row.attempt + 1}")


def check_tallies(engine: Engine, run_id: int) -> None:
    """The trigger-kept counters of the run equal a count of its rows."""
    scan: Counter = Counter()
    with access.read(engine, "scan") as conn:
        for r in conn.execute(select(deliveries).where(deliveries.c.run_id == run_id)
                              ).mappings():
            marks = sum(bit for column, bit in _BITS if r[column] is not None)
            if r["reply_text"] is not None:
                marks |= 16
            scan[(r["step"], r["state"], marks, r["worker"] or "")] += 1
        kept = Counter({(step, state, marks, worker): n
                        for step, state, marks, worker, n in tallies.read(conn, run_id).rows
                        if n})
    assert kept == scan


# --------------------------------------------------------------------------- the plan


def test_the_plan_stores_watch_and_the_fallback_step(ledger: Ledger) -> None:
    run_id = _run(ledger, 3, landline=1)
    unwatched = dict(_rows(1)[0], row=9, to=number(9))
    del unwatched["watch"], unwatched["fallback"]  # a campaign without second chances
    ledger.store_plan(run_id, [[unwatched]], start_at=T0)
    got = _all(ledger, run_id)
    assert [r["watch"] for r in got] == [1, 1, 1, None]
    assert [json.loads(r["fallback"]) if r["fallback"] else None for r in got] == [
        {**SMS, "payload": {"to": number(0), "text": "Olá Ana 0"}}, LANDLINE,
        {**SMS, "payload": {"to": number(2), "text": "Olá Ana 2"}}, None]
    assert {(r["attempt"], r["first_id"], r["rule"], r["verdict"]) for r in got} == {
        (1, None, None, None)}


# --------------------------------------------------------------------------- watched rows


def test_only_rows_sent_or_settled_await_a_verdict(ledger: Ledger) -> None:
    run_id = _run(ledger, 4, landline=3)
    store = RecyclingStore(ledger, run_id)
    assert store.watched(T0) == []  # planned rows: nothing to judge yet
    with access.transaction(ledger.engine, "claim two") as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=2)
        dq.claim(conn, [(r.id, "account") for r in due], CALLED)
    assert store.watched(T0) == []  # dispatching: not settled
    rows = _call(ledger, run_id, S.NOT_ANSWERED, cause=17)
    assert [r.row for r in rows] == [1, 2, 3, 4]
    first, last = rows[0], rows[-1]
    assert (first.first_id, first.attempt, first.state, first.kind) == (
        first.id, 1, "not_answered", "voice")
    assert first.dispatched_at == first.first_dispatched_at == CALLED
    assert first.ended_at == ENDED and first.details == {"cause": 17, "talkSeconds": 0}
    assert first.fallback == {**SMS, "payload": {"to": number(0), "text": "Olá Ana 0"}}
    assert last.fallback == LANDLINE and not any(r.suppressed for r in rows)
    ledger.suppress(number(2), source="reply", reason="SAIR")
    assert [r.suppressed for r in store.watched(T0)] == [False, False, True, False]
    assert [r.row for r in store.watched(T0, limit=2, after_id=first.id)] == [2, 3]


def _plan_of(engine: Engine, run_id: int) -> str:
    """The database's plan for :func:`recq.watched`'s query, with seq scans made dear."""
    stmt = recq._WATCHED_SELECT.params(run_id=run_id, after_id=0, limit=10)
    dialect = engine.dialect.name
    sql = str(stmt.compile(dialect=sqlite.dialect() if dialect == "sqlite"
                           else postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    with access.transaction(engine, "explain") as conn:
        if dialect == "sqlite":
            return " ".join(str(r[-1]) for r in conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + sql))
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        return " ".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql))


def test_the_rows_to_judge_are_read_through_their_partial_index(ledger: Ledger) -> None:
    run_id = _run(ledger, 3)
    _call(ledger, run_id)
    # the query repeats the index's predicate word for word: the database may use it
    assert "ix_deliveries_watch" in _plan_of(ledger.engine, run_id)


# --------------------------------------------------------------------------- verdicts


def test_a_retry_makes_one_attempt_row_even_written_twice(ledger: Ledger) -> None:
    run_id = _run(ledger, 3)
    store = RecyclingStore(ledger, run_id)
    rows = _call(ledger, run_id)
    busy = Retry("busy", 2, ENDED + timedelta(minutes=10), "busy: attempt 2")
    decisions: list[tuple[WatchedRow, Verdict]] = [
        (rows[0], _retry(rows[0])), (rows[1], busy),
        (rows[2], Wait(ENDED + timedelta(hours=1), "no outcome yet"))]
    done = store.recycle(ENDED, decisions)
    assert (done.retried, done.fell_back, done.final, done.taken_already) == (
        {"no_answer": 1, "busy": 1}, 0, 0, 0)
    assert done.earliest_due == ENDED + timedelta(minutes=10) and len(done.made_due) == 2
    again = store.recycle(ENDED, decisions)  # a crash before the caller saw the answer
    assert (again.retried, again.taken_already, again.made_due) == ({}, 2, [])

    got = {r["id"]: r for r in _all(ledger, run_id)}
    assert len(got) == 5
    source, made = got[rows[0].id], got[done.made_due[0]]
    assert (source["watch"], source["verdict"]) == (None, "not answered: attempt 2")
    assert got[rows[2].id]["watch"] == 1  # a wait writes nothing
    assert {k: made[k] for k in ("run_id", "seq", "row", "step", "to", "region", "kind",
                                 "path", "payload", "variables", "fallback")} == {
        k: source[k] for k in ("run_id", "seq", "row", "step", "to", "region", "kind",
                               "path", "payload", "variables", "fallback")}
    assert (made["state"], made["due_at"], made["attempt"], made["first_id"], made["rule"],
            made["watch"], made["attempts"], made["sender"]) == (
        "planned", ENDED + timedelta(hours=2), 2, rows[0].id, "no_answer", 1, 0, None)
    assert ledger.counts(run_id) == {"not_answered": 3, "planned": 2}
    check_tallies(ledger.engine, run_id)

    # attempt 2 goes out and is not answered: attempt 3 still points at the first
    with access.transaction(ledger.engine, "due") as conn:
        conn.execute(update(deliveries).where(deliveries.c.id.in_(done.made_due))
                     .values(due_at=T0))
    second = [r for r in _call(ledger, run_id) if r.id == done.made_due[0]]
    assert [(r.attempt, r.first_id, r.first_dispatched_at) for r in second] == [
        (2, rows[0].id, CALLED)]
    third = store.recycle(ENDED, [(second[0], _retry(second[0]))])
    assert [(r["attempt"], r["first_id"]) for r in _all(ledger, run_id)
            if r["id"] in third.made_due] == [(3, rows[0].id)]
    check_tallies(ledger.engine, run_id)


def test_the_unique_index_refuses_a_second_attempt_n(ledger: Ledger) -> None:
    run_id = _run(ledger, 1)
    rows = _call(ledger, run_id)
    made = RecyclingStore(ledger, run_id).recycle(ENDED, [(rows[0], _retry(rows[0]))]).made_due
    with pytest.raises(LedgerError, match="could not copy attempt 2"), \
            access.transaction(ledger.engine, "copy attempt 2") as conn:
        conn.execute(insert(deliveries).from_select(
            [c.name for c in deliveries.c if c.name != "id"],
            select(*(c for c in deliveries.c if c.name != "id"))
            .where(deliveries.c.id == made[0])))


def test_two_workers_writing_one_verdict_at_once_make_one_attempt(
        ledger: Ledger, db_backend: str) -> None:
    run_id = _run(ledger, 2)
    rows = _call(ledger, run_id)
    decisions = [(r, _retry(r)) for r in rows]
    writes = [w for r, v in decisions if (w := to_write(r, v)) is not None]
    results: list[Any] = []
    second = threading.Thread(target=lambda: results.append(
        RecyclingStore(ledger, run_id).recycle(ENDED, decisions)))
    with access.transaction(ledger.engine, "first worker") as conn:
        first = recq.recycle(conn, writes, ENDED, child=None)
        second.start()  # its UPDATE waits for this transaction's rows (or write lock)
        if db_backend == "postgresql":
            _wait_for_a_lock_wait(ledger.engine)
    second.join(timeout=30)
    assert not second.is_alive()
    assert len(first.made_due) == 2 and results[0].taken_already == 2
    assert results[0].made_due == []
    assert Counter(r["attempt"] for r in _all(ledger, run_id)) == {1: 2, 2: 2}
    check_tallies(ledger.engine, run_id)


def _wait_for_a_lock_wait(engine: Engine) -> None:
    """Until another backend waits on a row lock (the second worker's UPDATE)."""
    for _ in range(3000):
        with engine.connect() as conn:
            if conn.execute(text("SELECT COUNT(*) FROM pg_stat_activity "
                                 "WHERE wait_event_type = 'Lock'")).scalar():
                return
        threading.Event().wait(0.01)
    raise AssertionError("the second worker never waited for the first")


def test_a_final_verdict_ends_the_watch(ledger: Ledger) -> None:
    run_id = _run(ledger, 2)
    rows = _call(ledger, run_id, S.ANSWERED)
    done = RecyclingStore(ledger, run_id).recycle(ENDED, [
        (rows[0], Final("reached", reached=True)),
        (rows[1], Final("not answered after 3 attempts", reached=False))])
    assert (done.final, done.reached, done.made_due) == (2, 1, [])
    assert [(r["watch"], r["verdict"]) for r in _all(ledger, run_id)] == [
        (None, "reached"), (None, "not answered after 3 attempts")]
    assert RecyclingStore(ledger, run_id).watched(ENDED) == []


def test_each_row_gets_its_own_values_across_chunks(ledger: Ledger,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recq, "CHUNK", 2)  # 5 verdicts: three statements' worth of chunks
    run_id = _run(ledger, 5)
    ledger.create_fallback_run(run_id, "sms", "{}")
    store = RecyclingStore(ledger, run_id)
    rows = _call(ledger, run_id)
    verdicts: list[Verdict] = [
        Retry("busy", 2, ENDED + timedelta(minutes=10), "busy"),
        Fallback(2, "sms", "6h"),
        Retry("no_answer", 2, ENDED + timedelta(hours=2), "no answer"),
        Final("reached", reached=True),
        Retry("failed", 2, ENDED + timedelta(hours=5), "failed")]
    done = store.recycle(ENDED, list(zip(reversed(rows), reversed(verdicts), strict=True)))
    assert (done.retried, done.fell_back, done.final, done.reached) == (
        {"busy": 1, "no_answer": 1, "failed": 1}, 1, 1, 1)
    child = ledger.fallback_run_of(run_id)
    assert child is not None
    made = {r["first_id"]: (r["run_id"], r["rule"], r["due_at"], r["to"])
            for r in _all(ledger, run_id) + _all(ledger, child) if r["first_id"]}
    assert made == {
        rows[0].id: (run_id, "busy", ENDED + timedelta(minutes=10), number(0)),
        rows[1].id: (child, "fallback", ENDED, number(1)),
        rows[2].id: (run_id, "no_answer", ENDED + timedelta(hours=2), number(2)),
        rows[4].id: (run_id, "failed", ENDED + timedelta(hours=5), number(4))}
    assert [r["verdict"] for r in _all(ledger, run_id)][:5] == [
        "busy", "6h", "no answer", "reached", "failed"]
    check_tallies(ledger.engine, run_id)
    check_tallies(ledger.engine, child)


# --------------------------------------------------------------------------- fallback


def test_a_fallback_lands_in_the_child_run(ledger: Ledger) -> None:
    run_id = _run(ledger, 3, landline=2)
    store = RecyclingStore(ledger, run_id)
    rows = _call(ledger, run_id)
    with pytest.raises(RunStateError, match="has no fallback run"):
        store.recycle(ENDED, [(rows[0], Fallback(2, "sms", "not delivered in 6h"))])
    assert ledger.fallback_run_of(run_id) is None and store.watched(ENDED) == rows  # nothing
    # written
    child = ledger.create_fallback_run(run_id, "sms", '{"version": 1}')
    assert ledger.create_fallback_run(run_id, "sms", "{}") == child  # made once
    assert ledger.fallback_run_of(run_id) == child
    later = ENDED + timedelta(hours=6)
    done = store.recycle(later, [(rows[0], Fallback(2, "sms", "not answered in 6h")),
                                 (rows[2], Final("no fallback: landline", reached=False))])
    assert (done.fell_back, done.final, done.earliest_due) == (1, 1, later)
    [row] = _all(ledger, child)
    assert row["id"] == done.made_due[0]
    assert (row["step"], row["kind"], row["path"], json.loads(row["payload"]),
            row["to"], row["row"], row["state"], row["due_at"], row["attempt"],
            row["first_id"], row["rule"], row["watch"], row["sender"]) == (
        0, "sms", "/api/v1/sms/send", {"to": number(0), "text": "Olá Ana 0"}, number(0),
        1, "planned", later, 2, rows[0].id, "fallback", None, None)
    made = ledger.get_run(child)
    assert (made.channel, made.parent_run_id, made.planned_count, made.fire_time,
            made.status, made.options) == ("sms", run_id, 1, None, "planned",
                                           '{"version": 1}')
    assert store.recycle(later, [(rows[0], Fallback(2, "sms", "again"))]).fell_back == 0
    assert len(_all(ledger, child)) == 1
    check_tallies(ledger.engine, child)
    check_tallies(ledger.engine, run_id)


def test_a_fallback_run_lives_and_dies_with_its_parent(ledger: Ledger) -> None:
    from scheduler.usecases.planning import unfinished_run_for

    run_id = _run(ledger, 2)
    child = ledger.create_fallback_run(run_id, "sms", "{}")
    assert ledger.discard_interrupted_plans() == []  # planned empty on purpose
    assert RecyclingStore(ledger, child).parent() == (run_id, RunStatus.PLANNED)
    assert RecyclingStore(ledger, run_id).parent() is None
    rows = _call(ledger, run_id)
    RecyclingStore(ledger, run_id).recycle(ENDED, [(rows[0], Fallback(2, "sms", "6h"))])
    ledger.set_status(run_id, RunStatus.COMPLETED)
    assert RecyclingStore(ledger, child).parent() == (run_id, RunStatus.COMPLETED)
    assert unfinished_run_for(ledger, "dial") is None  # the child is not the campaign's run
    ledger.set_status(run_id, RunStatus.RUNNING)
    assert unfinished_run_for(ledger, "dial").id == run_id  # type: ignore[union-attr]
    ledger.request(run_id, "cancel")  # no live owner: cancelled at once, child included
    assert ledger.get_run(child).status == RunStatus.CANCELLED
    assert ledger.counts(child) == {"skipped": 1}


def test_an_interrupted_plan_takes_its_empty_fallback_run(ledger: Ledger) -> None:
    run_id = ledger.create_run(campaign_name="dial", channel="voice", definition_path="d",
                               definition={}, delivery_mode="at-most-once", timezone="UTC")
    ledger.create_fallback_run(run_id, "sms", "{}")
    with access.transaction(ledger.engine, "the planner died") as conn:
        conn.execute(update(runs).where(runs.c.id == run_id).values(owner_pid=None))
    assert ledger.discard_interrupted_plans() == [run_id]
    assert ledger.list_runs() == []  # its child with it


# --------------------------------------------------------------------------- migration


def test_the_migration_goes_down_and_up_with_rows(ledger_url: str, clock: FakeClock) -> None:
    engine = open_ledger(ledger_url)
    try:
        ledger = Ledger(engine, clock=clock)
        run_id = _run(ledger, 3)
        rows = _call(ledger, run_id)
        RecyclingStore(ledger, run_id).recycle(ENDED, [(rows[0], _retry(rows[0]))])
        config = alembic_config(engine)
        command.downgrade(config, "0012")
        with engine.connect() as conn:
            left = conn.execute(text("SELECT COUNT(*) FROM deliveries")).scalar()
            names = {c for (c,) in conn.execute(text(
                "SELECT name FROM pragma_table_info('deliveries')"
                if engine.dialect.name == "sqlite" else
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'deliveries'"))}
        assert left == 4 and not names & {"attempt", "first_id", "watch", "fallback"}
        with engine.begin() as conn:  # the tallies' triggers are still there
            conn.execute(text("UPDATE deliveries SET state = 'failed' WHERE id = :i"),
                         {"i": rows[1].id})
        command.upgrade(config, "head")
        got = _all(ledger, run_id)
        assert [(r["attempt"], r["first_id"], r["watch"]) for r in got] == [(1, None, None)] * 4
        assert ledger.counts(run_id) == {"not_answered": 2, "failed": 1, "planned": 1}
        check_tallies(engine, run_id)
    finally:
        engine.dispose()


def test_a_replan_keeps_the_retries_already_planned(ledger: Ledger) -> None:
    """A re-plan replaces the rows never handed to the service, but not an attempt a rule
    planned: the recipient's first call went out, so the new plan drops their step, and
    losing the retry would leave them with one call instead of the rules' three."""
    run_id = _run(ledger, 3)
    store = RecyclingStore(ledger, run_id)
    rows = _call(ledger, run_id)
    done = store.recycle(ENDED, [(rows[0], _retry(rows[0]))])
    options = RunControlStore(ledger, run_id).options()
    _written, dropped = ledger.replan(run_id, [_rows(3)], start_at=T0, definition={},
                                      fingerprint="{}", options=options)
    assert dropped == 3  # the three recipients' steps were all sent
    after = _all(ledger, run_id)
    assert [(r["id"], r["attempt"], r["state"]) for r in after
            if r["first_id"] is not None] == [(done.made_due[0], 2, "planned")]
    check_tallies(ledger.engine, run_id)
