"""The two partial indexes of migration 0016 (issue 32, P1): every query that read
``ix_deliveries_msgid`` or ``ix_deliveries_sender_dispatched`` before still reads it, proved
by the database's own plan (SQLite ``EXPLAIN QUERY PLAN``, PostgreSQL ``EXPLAIN`` with
sequential scans off, the table being small); a plan's rows enter neither; a new ledger's
indexes equal the models'."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, event, inspect, text

from scheduler.ledger import access
from scheduler.ledger.db import alembic_config
from scheduler.ledger.models import Delivery
from scheduler.ledger.queries import ambiguous, caps, sender_calls
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import sender_health as shq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.run_reads import RunReads, RunSamples, RunSenderReads
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from scheduler.ledger.worker_store import day_sends
from tests.factories import T0
from tests.senders.support import dispatched_run

MSGID = "ix_deliveries_msgid"
SENDER = "ix_deliveries_sender_dispatched"
HOUR = timedelta(hours=1)
SENDERS = ["s1", "s2"]


def _seeded(ledger: Ledger) -> int:
    """A run of 4 dispatched rows (s1, s2) holding message ids m0…m3, and 50 planned;
    an event of m0."""
    run_id = dispatched_run(ledger, [("s1", T0), ("s2", T0), ("s1", T0 + HOUR),
                                     ("s2", T0 + HOUR)], planned=50)
    with access.transaction(ledger.engine, "give the sends message ids") as conn:
        ids = conn.execute(text("SELECT id FROM deliveries WHERE sender IS NOT NULL "
                                "ORDER BY id")).scalars().all()
        for n, row_id in enumerate(ids):
            conn.execute(text("UPDATE deliveries SET message_id = :m, message_id_norm = :m "
                              "WHERE id = :id"), {"m": f"m{n}", "id": row_id})
        conn.execute(text("INSERT INTO events (dedupe_key, event, number, message_id_norm, "
                          "received_at, payload) VALUES ('e1', 'messages.sent', '+100', 'm0', "
                          ":at, '{}')"), {"at": T0})
    return run_id


@contextmanager
def _statements(conn: Connection) -> Iterator[list[tuple[str, Any]]]:
    """The statements run on ``conn`` (SQLite: each with its values in its text, through
    the driver's trace, which sees the queries that bypass SQLAlchemy too)."""
    seen: list[tuple[str, Any]] = []
    if conn.dialect.name == "sqlite":
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.set_trace_callback(lambda sql: seen.append((sql, None)))
        try:
            yield seen
        finally:
            driver.set_trace_callback(None)
        return

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
                many: bool) -> None:
        seen.append((statement, parameters[0] if many else parameters))

    event.listen(conn, "before_cursor_execute", capture)
    try:
        yield seen
    finally:
        event.remove(conn, "before_cursor_execute", capture)


def _plans(conn: Connection, run: Callable[[Connection], object]) -> list[str]:
    """The plan of each statement on ``deliveries`` that ``run`` executes, as text."""
    with _statements(conn) as seen:
        run(conn)
    statements = [(sql, params) for sql, params in seen
                  if "deliveries" in sql and sql.lstrip().upper().startswith(
                      ("SELECT", "UPDATE", "WITH"))]
    assert statements, "the query ran no statement on deliveries"
    plans = []
    driver = conn.connection.driver_connection
    assert driver is not None
    if conn.dialect.name == "sqlite":
        for sql, _params in statements:
            rows = driver.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
            plans.append("\n".join(str(row[-1]) for row in rows))
        return plans
    cursor = driver.cursor()
    cursor.execute("SET LOCAL enable_seqscan = off")
    for sql, params in statements:
        cursor.execute(f"EXPLAIN {sql}", params)
        plans.append("\n".join(str(row[0]) for row in cursor.fetchall()))
    return plans


def _uses(plan: str, index: str) -> bool:
    return f"INDEX {index}" in plan or f"using {index}" in plan or f"on {index}" in plan


def _by_message_id(run_id: int) -> dict[str, Callable[[Connection], object]]:
    many = [f"m{n}" for n in range(600)]  # a batch's IN list: 500 ids, then 100
    return {
        "held_message_ids (IN 500)": lambda c: tq.held_message_ids(c, many),
        "track_progress": lambda c: tq.track_progress(
            c, S.DELIVERED, [("m0", T0), ("m1", T0)], T0, stamps=["delivered_at"]),
        "delivery_answered": lambda c: tq.delivery_answered(c, "m0", None),
        "merge_details": lambda c: tq.merge_details(c, "m0", {"k": 1}),
        "sent_events_for": lambda c: ambiguous.sent_events_for(c, "+100", None, T0),
        "recent_events": lambda c: RunSamples(c).events(run_id),
    }


def _by_sender(run_id: int) -> dict[str, Callable[[Connection], object]]:
    return {
        "sent_today_by_sender": lambda c: dq.sent_today_by_sender(c, T0),
        "nth_send_since": lambda c: caps.nth_send_since(c, "s1", T0, 1),
        "day_sends": lambda c: day_sends(c, T0, SENDERS),
        "sender_profiles.sends_since": lambda c: spq.sends_since(c, SENDERS, T0),
        "signals_since": lambda c: shq.signals_since(c, SENDERS, T0, T0),
        "last_sends": lambda c: shq.last_sends(c, SENDERS),
        "recent_sends": lambda c: RunReads(c).recent_sends(run_id, SENDERS, T0),
        "dispatched_since": lambda c: RunSenderReads(c).dispatched_since(SENDERS, T0),
        "calls_under_way": lambda c: sender_calls.calls_under_way(c, run_id, SENDERS, T0),
    }


def _explain(ledger: Ledger, run: Callable[[Connection], object],
             hide: tuple[str, ...] = ()) -> list[str]:
    """:func:`_plans` in a transaction rolled back, without the indexes ``hide`` names
    (PostgreSQL's DDL is transactional)."""
    with ledger.engine.connect() as conn, conn.begin() as tx:
        for index in hide:
            conn.execute(text(f"DROP INDEX {index}"))
        plans = _plans(conn, run)
        tx.rollback()
    return plans


@pytest.mark.parametrize("name", list(_by_message_id(0)))
def test_each_query_by_message_id_reads_the_partial_index(ledger: Ledger, name: str) -> None:
    run_id = _seeded(ledger)
    plans = _explain(ledger, _by_message_id(run_id)[name])
    assert any(_uses(plan, MSGID) for plan in plans), plans
    if name.startswith("held_message_ids"):  # each IN list of the batch, 500 ids and 100
        assert len(plans) == 2 and all(_uses(plan, MSGID) for plan in plans), plans


@pytest.mark.parametrize("name", list(_by_sender(0)))
def test_each_query_by_sender_reads_the_partial_index(ledger: Ledger, name: str,
                                                      db_backend: str) -> None:
    run_id = _seeded(ledger)
    plans = _explain(ledger, _by_sender(run_id)[name])
    if name == "calls_under_way" and db_backend != "sqlite":
        # PostgreSQL reads this small table's one run through the claim index, at 0015 as
        # now (the statement names the run): shown usable with that index set aside
        assert not any(_uses(plan, SENDER) for plan in plans), plans
        plans = _explain(ledger, _by_sender(run_id)[name], hide=("ix_deliveries_claim",))
    assert any(_uses(plan, SENDER) for plan in plans), plans


def _index_entries(conn: Connection, name: str) -> int:
    """Rows the index holds (SQLite: read through it by ``INDEXED BY``)."""
    if conn.dialect.name == "sqlite":
        column = "message_id_norm" if name == MSGID else "sender"
        return int(conn.execute(text(
            f"SELECT count(*) FROM deliveries INDEXED BY {name} WHERE {column} IS NOT NULL"
        )).scalar_one())
    return int(conn.execute(text(
        "SELECT reltuples FROM pg_class WHERE relname = :n"), {"n": name}).scalar_one())


def test_a_plans_rows_enter_neither_index_and_a_send_does(ledger: Ledger,
                                                          db_backend: str) -> None:
    _seeded(ledger)
    if db_backend != "sqlite":
        with ledger.engine.connect() as conn:
            conn.execute(text("ANALYZE deliveries"))
            conn.commit()
    with access.transaction(ledger.engine, "count the entries") as conn:
        assert _index_entries(conn, MSGID) == 4
        assert _index_entries(conn, SENDER) == 4
        assert conn.execute(text("SELECT count(*) FROM deliveries")).scalar_one() == 54


def _definitions(conn: Connection) -> dict[str, tuple[list[str], str | None]]:
    """Each of the two indexes' columns and predicate (normalised) as the ledger has them."""
    found = {}
    for index in inspect(conn).get_indexes("deliveries"):
        if index["name"] in (MSGID, SENDER):
            where = index.get("dialect_options", {}).get(f"{conn.dialect.name}_where")
            found[str(index["name"])] = ([str(c) for c in index["column_names"]], _norm(where))
    return found


def _norm(where: Any) -> str | None:
    return None if where is None else str(where).replace("(", "").replace(")", "").lower()


def test_the_migrated_indexes_equal_the_models_and_the_downgrade_restores_them(
        ledger: Ledger, db_backend: str) -> None:
    models = {str(ix.name): ([c.name for c in ix.columns],
                             _norm(ix.dialect_options[db_backend]["where"]))
              for ix in Delivery.__table__.indexes  # type: ignore[attr-defined]
              if ix.name in (MSGID, SENDER)}
    assert models == {MSGID: (["message_id_norm"], "message_id_norm is not null"),
                      SENDER: (["sender", "dispatched_at"], "sender is not null")}
    with ledger.engine.connect() as conn:
        assert _definitions(conn) == models
    config = alembic_config(ledger.engine)
    command.downgrade(config, "0015")
    with ledger.engine.connect() as conn:
        assert _definitions(conn) == {MSGID: (["message_id_norm"], None),
                                      SENDER: (["sender", "dispatched_at"], None)}
    command.upgrade(config, "head")
    with ledger.engine.connect() as conn:
        assert _definitions(conn) == models
