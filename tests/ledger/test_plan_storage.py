"""The bulk path that stores a plan: exact text through it, and COPY on PostgreSQL."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from sqlalchemy import event, select, text

from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from tests.factories import T0, number, plan_rows

#: Text that a hand-rolled COPY or CSV encoding would corrupt.
AWKWARD = 'tab\there, new\nline, back\\slash, \\N, "quotes", \'single\', ação, 🎉, \r end'


def _run(ledger: Ledger) -> int:
    return ledger.create_run(campaign_name="bulk", channel="whatsapp", definition_path="c.toml",
                             definition={}, delivery_mode="at-most-once", timezone="UTC")


def test_awkward_text_and_nulls_come_back_exactly(ledger: Ledger) -> None:
    rows = plan_rows(3)
    rows[0]["payload"] = {"text": AWKWARD, "n": None}
    rows[0]["variables"] = {"nome": AWKWARD, "vazio": ""}
    rows[1]["region"] = None
    rows[2].update(state="skipped", reason=AWKWARD)
    run_id = _run(ledger)
    assert ledger.store_plan(run_id, [rows], start_at=T0) == 3

    d = tables.deliveries
    with ledger.engine.connect() as conn:
        stored = [dict(r) for r in conn.execute(
            select(d).where(d.c.run_id == run_id).order_by(d.c.seq)).mappings()]
    assert json.loads(stored[0]["payload"]) == {"text": AWKWARD, "n": None}
    assert json.loads(stored[0]["variables"]) == {"nome": AWKWARD, "vazio": ""}
    assert stored[1]["region"] is None and stored[0]["region"] == "BR"
    assert (stored[2]["state"], stored[2]["reason"], stored[2]["due_at"]) == (
        "skipped", AWKWARD, None)
    assert [r["due_at"] for r in stored[:2]] == [T0, T0]
    assert [r["seq"] for r in stored] == [0, 1, 2]


def test_a_plan_is_copied_not_inserted_row_by_row_on_postgresql(
        ledger: Ledger, db_backend: str) -> None:
    if db_backend != "postgresql":
        pytest.skip("COPY is PostgreSQL's; SQLite takes the executemany path")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(ledger.engine, "before_cursor_execute", seen)
    try:
        run_id = _run(ledger)
        ledger.store_plan(run_id, [plan_rows(500, steps=2)], start_at=T0)
    finally:
        event.remove(ledger.engine, "before_cursor_execute", seen)
    assert ledger.counts(run_id) == {"planned": 1000}
    assert not [s for s in statements if "INSERT INTO deliveries" in s]


def test_steps_sharing_one_variables_dict_each_store_their_recipients(ledger: Ledger) -> None:
    # the planner hands a recipient's steps one dict; the next recipient's differs
    rows = plan_rows(3, steps=2)
    for first in (0, 2, 4):
        rows[first + 1]["variables"] = rows[first]["variables"]
    rows[4]["variables"] = rows[5]["variables"] = None  # no variables at all: {}
    run_id = _run(ledger)
    ledger.store_plan(run_id, [rows], start_at=T0)

    d = tables.deliveries
    with ledger.engine.connect() as conn:
        stored = conn.execute(select(d.c.variables).where(d.c.run_id == run_id)
                              .order_by(d.c.seq)).scalars().all()
    assert [json.loads(v) for v in stored] == [
        {"nome": "Ana 0"}, {"nome": "Ana 0"}, {"nome": "Ana 1"}, {"nome": "Ana 1"}, {}, {}]


def test_the_garbage_collector_is_as_it_was_after_a_plan_stored_or_refused(
        ledger: Ledger) -> None:
    # paused while the plan is stored, back on afterwards, whatever happened
    def failing() -> Any:
        yield plan_rows(2)
        raise RuntimeError("CSV broke")

    assert gc.isenabled()
    ledger.store_plan(_run(ledger), [plan_rows(2)], start_at=T0)
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="CSV broke"):
        ledger.store_plan(_run(ledger), failing(), start_at=T0)
    assert gc.isenabled()
    gc.disable()
    try:
        ledger.store_plan(_run(ledger), [plan_rows(2)], start_at=T0)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_plans_rows_are_counted_as_built_and_the_tallies_equal_its_rows(
        ledger: Ledger) -> None:
    # planned, skipped, held and suppressed rows of two steps in three chunks, beside an
    # earlier run; on SQLite the new rows are counted from the batch, never read back
    ledger.suppress(number(7), source="test")
    earlier = _run(ledger)
    ledger.store_plan(earlier, [plan_rows(4, steps=2, skip={1})], start_at=T0)
    rows = plan_rows(30, steps=2, skip={3, 11})
    for held in rows[40:44]:
        held["state"] = "held"
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    run_id = _run(ledger)
    event.listen(ledger.engine, "before_cursor_execute", seen)
    try:
        assert ledger.store_plan(run_id, [rows[:21], rows[21:40], rows[40:]],
                                 start_at=T0) == 60
    finally:
        event.remove(ledger.engine, "before_cursor_execute", seen)
    assert ledger.counts(run_id) == {"planned": 50, "skipped": 6, "held": 4}
    with ledger.engine.connect() as conn:
        for run in (earlier, run_id):
            rows_by_key = dict(conn.execute(text(
                "SELECT step || ':' || state, COUNT(*) FROM deliveries WHERE run_id = :r"
                " GROUP BY step, state"), {"r": run}).all())
            tallied = {k: n for k, n in conn.execute(text(
                "SELECT step || ':' || state, SUM(n) FROM run_tallies WHERE run_id = :r"
                " GROUP BY step, state"), {"r": run}).all() if n}
            assert tallied == rows_by_key
    if ledger.engine.dialect.name == "sqlite":
        assert not [s for s in statements if "d.id > " in s]  # no scan of the new rows
