"""Unknown sends after the service's retry horizon: pure verdicts, then the ledger's.

A row is ``unproven`` (safe to send again) only when the receivers' recorded uptime covers
its whole horizon without a break, from its dispatch to the service's last retry, and no
proof to its number matched nothing; otherwise it is ``unknowable`` and the verdict says
why (when nobody listened, or the stray proof).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.dispatch.unknowns import (
    RETRY_HORIZON,
    STRAY_PROOF,
    Gap,
    judge_run,
    judge_unknowns,
)
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.rows import UptimeInterval
from scheduler.ledger.runs import Ledger
from tests.factories import make_run

T = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)
AFTER = T + RETRY_HORIZON + 60 * S  # every row sent at T is past its horizon


def up(start: float, last: float, key: str = "k", *, stopped: bool = False
       ) -> UptimeInterval:
    """A receiver at ``key`` that listened from T + start to T + last seconds (and then
    said it stopped, with ``stopped``)."""
    return UptimeInterval(key, T + start * S, T + last * S, T + last * S if stopped else None)


def test_a_send_still_inside_the_horizon_waits() -> None:
    verdicts = judge_unknowns([(1, T)], [up(-60, 10)], T + 60 * S)
    assert verdicts.waiting == [1] and verdicts.settles_at == T + RETRY_HORIZON
    # the person is told until when in the campaign's zone (12:06 UTC is 09:06 in São Paulo)
    lines = verdicts.describe(7, "America/Sao_Paulo")
    assert "(until 09:06:00 -03:00)" in lines[0]
    # nobody heard from in the last 15 s: the proof would be lost, and the person is told
    assert "`campaign receiver`" in lines[1]
    assert len(judge_unknowns([(1, T)], [up(-60, 55)], T + 60 * S).describe(7)) == 1


def test_no_proof_while_a_receiver_listened_through_the_whole_horizon_is_unproven() -> None:
    verdicts = judge_unknowns([(1, T)], [up(-60, 400)], AFTER)
    assert verdicts.unproven == [1] and not verdicts.unknowable
    assert "`campaign resend 7 --unproven` sends exactly those" in verdicts.describe(7)[0]
    # two receivers whose intervals meet (a worker's, then the next one's) leave no break
    assert judge_unknowns([(1, T)], [up(-60, 100), up(100, 400)], AFTER).unproven == [1]


def test_a_run_that_stopped_listening_inside_the_horizon_leaves_its_rows_unknowable(
) -> None:
    # issue 20: the run completed 1.5 min into the horizon and nothing listened afterwards;
    # the first attempt was heard, the retries had nowhere to land
    verdicts = judge_unknowns([(1, T), (2, T + 2 * S)], [up(-600, 90)], AFTER)
    assert verdicts.unknowable == [1, 2] and not verdicts.unproven
    assert verdicts.gaps[1] == Gap(T + 90 * S, T + RETRY_HORIZON)
    lines = verdicts.describe(7, "America/Sao_Paulo")
    assert lines[0].startswith("2 unknown that nothing can settle")
    assert "  2: no receiver listened from 09:01:30 -03:00 to 09:06:02 -03:00" in lines
    assert "`campaign resend 7 --unknown`" in lines[-1] and "twice" in lines[-1]
    assert not any("--unproven" in line for line in lines)


def test_a_kill_right_after_sending_leaves_the_row_unknowable_even_if_a_process_listened_later(
) -> None:
    crashed = up(-60, 1)
    restarted = up(200, 800)
    verdicts = judge_unknowns([(1, T)], [crashed, restarted], AFTER + 600 * S)
    # the first attempts went to nobody; before, hearing the last retry made it "unproven"
    assert verdicts.unknowable == [1]
    assert verdicts.gaps[1] == Gap(T + 1 * S, T + 200 * S)


def test_any_break_in_the_uptime_leaves_the_row_unknowable_whatever_the_horizon() -> None:
    # issue 31: a restart 4-6 s long was tolerated (up to 15 s) on the strength of the
    # service's retry schedule; the sandbox had given up after 3 s, and 29 rows it had
    # taken were offered as safe. No schedule is assumed any more: a break is a break.
    verdicts = judge_unknowns([(1, T)], [up(-60, 100), up(101, 400)], AFTER)
    assert verdicts.unknowable == [1] and verdicts.gaps[1] == Gap(T + 100 * S, T + 101 * S)
    short = timedelta(seconds=8)
    assert judge_unknowns([(1, T)], [up(-60, 3), up(3.5, 60)], T + 60 * S,
                          horizon=short).unknowable == [1]
    assert judge_unknowns([(1, T)], [up(-60, 60)], T + 60 * S, horizon=short).unproven == [1]
    # a receiver that started after the send: the first attempt had nowhere to land
    late = judge_unknowns([(1, T)], [up(0.5, 800)], AFTER)
    assert late.unknowable == [1] and late.gaps[1] == Gap(T, T + 0.5 * S)


def test_a_proof_that_matched_no_row_makes_the_row_unknowable_even_when_heard_through(
) -> None:
    verdicts = judge_unknowns([(1, T), (2, T)], [up(-60, 800)], AFTER, stray={2})
    assert verdicts.unproven == [1] and verdicts.unknowable == [2]
    assert verdicts.reasons() == [f"1: {STRAY_PROOF}"]
    # while the horizon runs it still waits (its own proof may come)
    assert judge_unknowns([(2, T)], [up(-60, 800)], T + 60 * S, stray={2}).waiting == [2]


def test_only_receivers_at_the_url_the_events_went_to_count() -> None:
    crashed = up(-60, 1)
    elsewhere = up(2, 800, key="other-port")
    assert judge_unknowns([(1, T)], [crashed, elsewhere], AFTER).unknowable == [1]
    # two receivers listened at the send (workers on two ports): the ledger cannot say which
    # one the sender pointed at, so both must have listened through
    both = [up(-60, 800), up(-60, 100, key="w2")]
    verdicts = judge_unknowns([(1, T)], both, AFTER)
    assert verdicts.unknowable == [1] and verdicts.gaps[1] == Gap(T + 100 * S,
                                                                  T + RETRY_HORIZON)


def test_a_receiver_heard_from_lately_decides_at_its_next_heartbeat() -> None:
    # the horizon ended 2 s ago; the receiver's last heartbeat came 4 s ago
    now = T + RETRY_HORIZON + 2 * S
    verdicts = judge_unknowns([(1, T)], [up(-60, 354)], now)
    assert verdicts.waiting == [1] and verdicts.settles_at == T + RETRY_HORIZON
    assert judge_unknowns([(1, T)], [up(-60, 361)], now).unproven == [1]
    # not heard from again: it stopped, and the retries after its last word went nowhere
    assert judge_unknowns([(1, T)], [up(-60, 354)], T + 370 * S).unknowable == [1]
    # one that said it stopped is not waited for
    stopped = judge_unknowns([(1, T)], [up(-60, 354, stopped=True)], now)
    assert stopped.unknowable == [1] and not stopped.listening


def test_no_receiver_at_all_is_unknowable_and_each_reason_is_counted() -> None:
    verdicts = judge_unknowns([(1, T), (2, None)], [], AFTER)
    assert verdicts.unknowable == [1, 2]
    lines = verdicts.describe(7)
    assert "  1: no receiver listened from 12:00:00 UTC to 12:06:00 UTC" in lines
    assert "  1: no dispatch time recorded" in lines
    assert any("resend 7 --unknown" in line for line in lines)
    # rows that lost their receiver at the same moment are told together; past three
    # moments, the rest are counted
    kills = [up(-60, 10), up(30, 40), up(60, 70), up(90, 100), up(120, 130)]
    rows = [(1, T), (2, T + 1 * S), (3, T + 35 * S), (4, T + 65 * S), (5, T + 95 * S)]
    reasons = judge_unknowns(rows, kills, T + 900 * S).reasons()
    assert reasons[0] == "2: no receiver listened from 12:00:10 UTC to 12:00:30 UTC"
    assert len(reasons) == 4
    assert reasons[-1] == "1: at other times, no receiver listened (or other causes)"


def test_stopping_early_says_until_when_and_how_to_let_the_proof_arrive() -> None:
    verdicts = judge_unknowns([(1, T), (2, T + 30 * S)], [up(-60, 90)], T + 90 * S)
    note = verdicts.stop_note("America/Sao_Paulo")
    assert note.startswith("stopped listening with 2 sends in doubt")
    assert "until 09:06:30 -03:00" in note
    assert "`campaign receiver` (or `campaign serve`)" in note


def test_resend_unproven_queues_exactly_the_unproven_rows(ledger_url: str) -> None:
    clock = {"now": T}
    ledger = Ledger(open_ledger(ledger_url), clock=lambda: clock["now"])
    run_id = make_run(ledger, 4)
    with ledger.engine.begin() as conn:
        ids = [i for i, *_ in conn.exec_driver_sql(
            f"SELECT id FROM deliveries WHERE run_id = {run_id} ORDER BY id")]
        conn.exec_driver_sql(
            "UPDATE deliveries SET state = 'unknown', dispatched_at = ? WHERE id = ?"
            if ledger.engine.dialect.name == "sqlite" else
            "UPDATE deliveries SET state = 'unknown', dispatched_at = %s WHERE id = %s",
            [(T, ids[0]), (T, ids[1]), (T + 500 * S, ids[2]), (T + 200 * S, ids[3])])
        first = uq.open_uptime(conn, 1, "k", T - 60 * S)
        uq.touch_uptime(conn, first, T + 380 * S)  # then killed
        later = uq.open_uptime(conn, 2, "k", T + 600 * S)
        uq.touch_uptime(conn, later, T + 650 * S)
        uq.stop_uptime(conn, later, T + 690 * S)
    clock["now"] = T + 700 * S
    verdicts = judge_run(ledger, run_id, clock["now"])
    # the first two were heard through; the third still waits; the fourth lost its retries
    assert sorted(verdicts.unproven) == ids[:2] and verdicts.waiting == [ids[2]]
    assert verdicts.unknowable == [ids[3]]
    assert verdicts.gaps[ids[3]] == Gap(T + 380 * S, T + 560 * S)
    assert not verdicts.listening  # the later receiver said it stopped
    assert ledger.requeue(run_id, ["unknown"], ids=verdicts.unproven) == 2
    assert ledger.counts(run_id) == {"planned": 2, "unknown": 2}
    ledger.engine.dispose()


def test_a_stored_proof_that_matched_no_row_is_read_from_the_ledger(ledger_url: str) -> None:
    clock = {"now": T}
    ledger = Ledger(open_ledger(ledger_url), clock=lambda: clock["now"])
    run_id = make_run(ledger, 2)
    sqlite = ledger.engine.dialect.name == "sqlite"
    mark = "?" if sqlite else "%s"
    with ledger.engine.begin() as conn:
        rows = list(conn.exec_driver_sql(
            f"SELECT id, \"to\" FROM deliveries WHERE run_id = {run_id} ORDER BY id"))
        conn.exec_driver_sql(
            f"UPDATE deliveries SET state = 'unknown', sender = 's1', dispatched_at = {mark} "
            f"WHERE run_id = {mark}", (T, run_id))
        # a messages.sent to the second number, from its sender, that no delivery holds
        conn.exec_driver_sql(
            "INSERT INTO events (dedupe_key, event, session_id, number, message_id_norm, "
            f"received_at, result, payload) VALUES ({', '.join([mark] * 8)})",
            ("k1", "messages.sent", "s1", rows[1][1], "3eb0abc", T + 2 * S, "unmatched",
             "{}"))
        listening = uq.open_uptime(conn, 1, "k", T - 60 * S)
        uq.touch_uptime(conn, listening, T + 800 * S)
    clock["now"] = T + 800 * S
    verdicts = judge_run(ledger, run_id, clock["now"])
    assert verdicts.unproven == [rows[0][0]] and verdicts.unknowable == [rows[1][0]]
    assert verdicts.causes[rows[1][0]] == STRAY_PROOF
    ledger.engine.dispose()
