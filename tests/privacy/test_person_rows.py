"""``person export`` and ``forget`` read a person's rows by index: every table of the ledger
has its place in :mod:`scheduler.ledger.person_rows` (a table added without one fails
here), and on SQLite each holder's lookup is an index search, never a scan of the table."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select, text

from scheduler.ledger import access
from scheduler.ledger import person_rows as pr
from scheduler.ledger.privacy import deliveries_of
from scheduler.ledger.runs import Ledger
from tests.factories import make_run, number


def test_every_table_has_its_place(ledger: Ledger) -> None:
    names = set(inspect(ledger.engine).get_table_names())
    held = {h.table for h in pr.HOLDERS}
    unplaced = names - held - pr.NOTHING_PERSONAL - pr.SWEPT
    assert not unplaced, (
        f"{sorted(unplaced)}: say in scheduler/ledger/person_rows.py how a person's rows are "
        "found there (HOLDERS, by an index), or that it holds none (NOTHING_PERSONAL), or "
        "that it stays small (SWEPT)")
    assert not (held & pr.SWEPT) and not (held & pr.NOTHING_PERSONAL)


def test_each_holder_finds_the_person_by_an_index(ledger: Ledger) -> None:
    if ledger.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's query plans say SEARCH or SCAN")
    make_run(ledger, 3)
    digits = number(1)
    with access.transaction(ledger.engine) as conn:
        conn.execute(text("INSERT INTO labels (session_id, label_id, name, name_rank, color, "
                          "color_rank, deleted, rank, updated_at) VALUES "
                          "('s1', '1', 'VIP', 'a', 1, 'a', 0, 'a', '2026-01-01')"))
    with access.read(ledger.engine) as conn:
        all_tables = pr.tables(conn)
        mine = deliveries_of(conn, digits)
        person = pr.Person.of(conn, digits, mine, all_tables["labels"])
        assert person.ids and person.run_ids and person.label_pairs == [("s1", "1")]
        found: pr.Found = {"outbox_events": [{"id": 1}], "recipient_names": [{"name_id": 1}],
                           "person_names": [{"id": 1}]}
        plans = {}
        for holder in pr.HOLDERS:
            table = all_tables[holder.table]
            where = holder.where(table, person, found)
            assert where is not None, holder.table
            sql = str(select(table).where(where).compile(
                conn, compile_kwargs={"literal_binds": True}))
            plans[holder.table] = " ".join(
                str(r[-1]) for r in conn.execute(text("EXPLAIN QUERY PLAN " + sql)))
    scans = {name: plan for name, plan in plans.items()
             if "SCAN" in plan}
    assert not scans, scans
