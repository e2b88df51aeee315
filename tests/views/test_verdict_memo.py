"""A run's ``unknown`` verdicts and skip reasons kept between reads (issue 34, H1): the kept
answer is always the full judgement's, and is judged again as soon as the rows, the events
or the receivers' uptime it came from change; a judgement still waiting is never kept."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import update

from scheduler.dispatch.unknowns import UnknownVerdicts, judge_run
from scheduler.ledger import access
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.queries.tables import deliveries, events
from scheduler.ledger.run_reads import VerdictReads
from scheduler.ledger.runs import Ledger
from scheduler.views import verdict_memo
from tests.factories import T0, make_run, number

HORIZON = timedelta(minutes=6)
LATER = T0 + timedelta(hours=2)


def unknown_rows(ledger: Ledger, run_id: int, ids: range) -> None:
    """Rows ``ids`` (0-based) of the run ``unknown``, dispatched at T0 + i minutes."""
    with access.transaction(ledger.engine, "test") as conn:
        for i in ids:
            conn.execute(update(deliveries).where(deliveries.c.run_id == run_id,
                                                  deliveries.c.to == number(i))
                         .values(state="unknown", sender="s1",
                                 dispatched_at=T0 + timedelta(minutes=i)))


def kept(ledger: Ledger, run_id: int, now: datetime = LATER) -> UnknownVerdicts:
    with access.snapshot(ledger.engine, "test") as conn:
        return verdict_memo.kept_verdicts(conn, run_id, now, HORIZON)


def same(a: UnknownVerdicts, b: UnknownVerdicts) -> bool:
    return ((a.waiting, a.unproven, sorted(a.unknowable), a.settles_at, a.causes,
             a.listening, a.describe(1)) ==
            (b.waiting, b.unproven, sorted(b.unknowable), b.settles_at, b.causes,
             b.listening, b.describe(1)))


def test_the_kept_verdicts_are_the_full_judgements_until_something_changes(
        ledger: Ledger) -> None:
    run_id = make_run(ledger, 6)
    unknown_rows(ledger, run_id, range(4))
    with access.transaction(ledger.engine, "test") as conn:  # listened through rows 0-1
        up = uq.open_uptime(conn, 1, "k", T0 - timedelta(minutes=1))
        uq.stop_uptime(conn, up, T0 + timedelta(minutes=7.5))
    first = kept(ledger, run_id)
    assert same(first, judge_run(ledger, run_id, LATER, horizon=HORIZON))
    assert len(first.unproven) == 2 and len(first.unknowable) == 2
    again = kept(ledger, run_id)
    assert isinstance(again, verdict_memo._Settled)  # the kept judgement, not read again
    assert same(again, first)
    # a row leaves `unknown`: judged again
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(update(deliveries).where(deliveries.c.to == number(3))
                     .values(state="sent"))
    after = kept(ledger, run_id)
    assert not isinstance(after, verdict_memo._Settled)  # judged again
    assert len(after.unknowable) == 1
    assert same(after, judge_run(ledger, run_id, LATER, horizon=HORIZON))
    # a receiver's interval covering the rest: judged again
    with access.transaction(ledger.engine, "test") as conn:
        up = uq.open_uptime(conn, 2, "k", T0 + timedelta(minutes=7.5))
        uq.stop_uptime(conn, up, T0 + timedelta(minutes=30))
    covered = kept(ledger, run_id)
    assert len(covered.unproven) == 3 and not covered.unknowable
    assert same(covered, judge_run(ledger, run_id, LATER, horizon=HORIZON))
    # a proof that matches no row arrives for row 0: stray, judged again
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(events.insert().values(event="messages.sent", number=number(0),
                                            session_id="s1", message_id_norm="lost-1",
                                            received_at=T0 + timedelta(minutes=1),
                                            payload="{}", dedupe_key="test-lost-1"))
    stray = kept(ledger, run_id)
    assert same(stray, judge_run(ledger, run_id, LATER, horizon=HORIZON))
    assert len(stray.unknowable) == 1 and len(stray.unproven) == 2


def test_a_row_sent_again_and_unknown_again_is_judged_again(ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    unknown_rows(ledger, run_id, range(2))
    settled = kept(ledger, run_id)
    assert len(settled.unknowable) == 2 and isinstance(kept(ledger, run_id),
                                                       verdict_memo._Settled)
    # resent (`campaign resend --unknown`, then resumed) and unknown again, a while later:
    # the same rows, the same count, no event; its dispatch time moved
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(update(deliveries).where(deliveries.c.to == number(1))
                     .values(dispatched_at=LATER - timedelta(minutes=2)))
    again = kept(ledger, run_id)
    assert same(again, judge_run(ledger, run_id, LATER, horizon=HORIZON))
    assert len(again.waiting) == 1 and len(again.unknowable) == 1


def test_a_judgement_still_waiting_is_judged_at_each_read(ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    unknown_rows(ledger, run_id, range(2))
    soon = T0 + timedelta(minutes=3)  # row 0's horizon ends at 6 min
    waiting = kept(ledger, run_id, now=soon)
    assert len(waiting.waiting) == 2
    assert same(kept(ledger, run_id, now=LATER),
                judge_run(ledger, run_id, LATER, horizon=HORIZON))
    assert not kept(ledger, run_id, now=LATER).waiting


def test_the_kept_skip_reasons_follow_new_skips(ledger: Ledger) -> None:
    run_id = make_run(ledger, 5)
    with access.transaction(ledger.engine, "test") as conn:  # an id whose square is large
        conn.execute(update(deliveries).where(deliveries.c.to == number(2))
                     .values(id=65521 * 1000 + 60_000))  # folded: 60,000
    with access.snapshot(ledger.engine, "test") as conn:
        every = VerdictReads(conn).skipped_by_kind
        assert verdict_memo.kept_skips(conn, run_id) == every(run_id) == {}
    ledger.suppress(number(1), source="test", reason="asked")
    with access.snapshot(ledger.engine, "test") as conn:
        found = verdict_memo.kept_skips(conn, run_id)
        assert found == VerdictReads(conn).skipped_by_kind(run_id) and sum(found.values()) == 1
    ledger.suppress(number(2), source="test", reason="asked")
    with access.snapshot(ledger.engine, "test") as conn:
        assert verdict_memo.kept_skips(conn, run_id) == VerdictReads(conn).skipped_by_kind(run_id)
        assert sum(verdict_memo.kept_skips(conn, run_id).values()) == 2
