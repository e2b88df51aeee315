"""The marks a run's view checks before it gives a kept judgement again (issue 34, H1):
:func:`verdict_marks.read_marks` reads in one statement what the rows say (the
same values, on SQLite and PostgreSQL, as the rows change), and on PostgreSQL the
``unknown`` and ``skipped`` marks come from ``ix_deliveries_marks`` (migration 0025) by an
index-only scan, whose predicate a prepared statement proves too."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, text, update

from scheduler.ledger import access
from scheduler.ledger.queries import verdict_marks as vm
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from tests.factories import T0, make_run, number


def _single(ledger: Ledger, run_id: int) -> vm.Marks:
    """The marks from the rows themselves (``born`` and ``minutes`` left out)."""
    with access.read(ledger.engine, "test") as conn:
        ids = conn.execute(select(deliveries.c.state, deliveries.c.id)
                           .where(deliveries.c.run_id == run_id)).all()
        newest = conn.execute(text("SELECT COALESCE(MAX(id), 0) FROM events")).scalar_one()

    def mark(state: str) -> tuple[int, int, int]:
        of = [i for s, i in ids if s == state]
        return len(of), sum(of), sum((i % vm.MODULUS) ** 2 for i in of)

    return vm.Marks(born="", unknown=mark("unknown"), skipped=mark("skipped"),
                    newest_event=int(newest), minutes="")


def _read(ledger: Ledger, run_id: int) -> vm.Marks:
    with access.snapshot(ledger.engine, "test") as conn:
        return vm.read_marks(conn, run_id)


def _set(ledger: Ledger, run_id: int, rows: range, **values: object) -> None:
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(update(deliveries).where(
            deliveries.c.run_id == run_id,
            deliveries.c.to.in_([number(i) for i in rows])).values(**values))


def test_one_statement_reads_what_the_single_marks_read(ledger: Ledger) -> None:
    run_id = make_run(ledger, 8)
    other = make_run(ledger, 3, name="other")
    marks = _read(ledger, run_id)
    assert marks.unknown == marks.skipped == (0, 0, 0) and marks.minutes == ""
    assert marks.born and marks.newest_event == 0
    seen = {marks}
    _set(ledger, run_id, range(3), state="unknown", sender="s1",
         dispatched_at=T0 + timedelta(minutes=1))
    _set(ledger, run_id, range(3, 5), state="skipped", reason="duplicate")
    _set(ledger, other, range(3), state="unknown", sender="s1", dispatched_at=T0)
    marks = _read(ledger, run_id)
    single = _single(ledger, run_id)
    assert marks._replace(minutes="", born="") == single
    assert marks.unknown[0] == 3 and marks.skipped[0] == 2 and marks.minutes
    seen.add(marks)
    # a row sent again later: the same unknown rows, another minute
    _set(ledger, run_id, range(1), dispatched_at=T0 + timedelta(minutes=9))
    again = _read(ledger, run_id)
    assert again.unknown == marks.unknown and again.minutes != marks.minutes
    seen.add(again)
    # one unknown row swapped for another (same count): the sums tell them apart
    _set(ledger, run_id, range(1), state="delivered")
    _set(ledger, run_id, range(5, 6), state="unknown", sender="s1",
         dispatched_at=T0 + timedelta(minutes=9))
    swapped = _read(ledger, run_id)
    assert swapped.unknown[0] == 3 and swapped.unknown != again.unknown
    assert swapped._replace(minutes="", born="") == _single(ledger, run_id)
    seen.add(swapped)
    assert len(seen) == 4
    with access.transaction(ledger.engine, "test") as conn:  # an event arrives
        conn.execute(text("INSERT INTO events (dedupe_key, event, received_at, payload) "
                          "VALUES ('e1', 'messages.sent', :at, '{}')"), {"at": T0})
    assert _read(ledger, run_id).newest_event == _single(ledger, run_id).newest_event > 0


def test_postgresql_reads_the_marks_from_their_index_alone(ledger: Ledger,
                                                          db_backend: str) -> None:
    if db_backend != "postgresql":
        return  # SQLite's claim index holds the rowid: no index of its own (0025)
    run_id = make_run(ledger, 20)
    _set(ledger, run_id, range(4), state="unknown", sender="s1", dispatched_at=T0)
    with ledger.engine.connect() as conn, conn.begin():
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        conn.execute(text("SET LOCAL enable_bitmapscan = off"))
        # a generic plan (as a prepared statement's may become) cannot see a parameter's
        # value: the states are written into the statement
        conn.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        plan = "\n".join(conn.execute(text(f"EXPLAIN {vm._MARKS_PG.text}"),
                                       {"run": run_id}).scalars())
    assert "Index Only Scan using ix_deliveries_marks" in plan, plan
    assert _read(ledger, run_id).unknown[0] == 4
