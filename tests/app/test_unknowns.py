"""Unknown sends after the service's retry horizon: pure verdicts, then the ledger's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.dispatch.unknowns import RETRY_HORIZON, judge_run, judge_unknowns
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.runs import Ledger
from tests.factories import make_run

T = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def test_a_send_still_inside_the_horizon_waits() -> None:
    verdicts = judge_unknowns([(1, T)], [("k", T - 60 * S, T + 10 * S)], T + 60 * S)
    assert verdicts.waiting == [1] and verdicts.settles_at == T + RETRY_HORIZON
    # the person is told until when in the campaign's zone (12:06 UTC is 09:06 in São Paulo)
    (line,) = verdicts.describe(7, "America/Sao_Paulo")
    assert "(until 09:06:00 -03:00)" in line


def test_no_proof_while_the_receiver_listened_means_the_service_did_not_take_it() -> None:
    # the dispatching process stayed up through the first attempt
    up = [("k", T - 60 * S, T + 400 * S)]
    assert judge_unknowns([(1, T)], up, T + 7 * 60 * S).unproven == [1]


def test_a_crash_right_after_sending_is_unproven_only_if_the_next_process_heard_the_retries(
) -> None:
    crashed = ("k", T - 60 * S, T + 1 * S)
    restarted_in_time = ("k", T + 200 * S, T + 500 * S)
    restarted_late = ("k", T + 600 * S, T + 700 * S)
    elsewhere = ("other-port", T + 200 * S, T + 500 * S)
    now = T + 800 * S
    assert judge_unknowns([(1, T)], [crashed, restarted_in_time], now).unproven == [1]
    assert judge_unknowns([(1, T)], [crashed, restarted_late], now).unknowable == [1]
    assert judge_unknowns([(1, T)], [crashed, elsewhere], now).unknowable == [1]


def test_a_gap_in_the_last_retry_window_leaves_it_unknowable() -> None:
    intervals = [("k", T - 60 * S, T + 1 * S), ("k", T + 290 * S, T + 320 * S),
                 ("k", T + 345 * S, T + 500 * S)]
    assert judge_unknowns([(1, T)], intervals, T + 900 * S).unknowable == [1]


def test_no_receiver_at_all_is_unknowable() -> None:
    verdicts = judge_unknowns([(1, T), (2, None)], [], T + 900 * S)
    assert verdicts.unknowable == [1, 2]
    assert any("resend 7 --unknown" in line for line in verdicts.describe(7))


def test_resend_unproven_queues_exactly_the_unproven_rows(ledger_url: str) -> None:
    clock = {"now": T}
    ledger = Ledger(open_ledger(ledger_url), clock=lambda: clock["now"])
    run_id = make_run(ledger, 3)
    with ledger.engine.begin() as conn:
        ids = [i for i, *_ in conn.exec_driver_sql(
            f"SELECT id FROM deliveries WHERE run_id = {run_id} ORDER BY id")]
        conn.exec_driver_sql(
            "UPDATE deliveries SET state = 'unknown', dispatched_at = ? WHERE id = ?"
            if ledger.engine.dialect.name == "sqlite" else
            "UPDATE deliveries SET state = 'unknown', dispatched_at = %s WHERE id = %s",
            [(T, ids[0]), (T, ids[1]), (T + 500 * S, ids[2])])
        key_id = uq.open_uptime(conn, 1, "k", T - 60 * S)
        uq.touch_uptime(conn, key_id, T + 30 * S)  # heard the first attempts only
    clock["now"] = T + 400 * S
    verdicts = judge_run(ledger, run_id, clock["now"])
    assert sorted(verdicts.unproven) == ids[:2] and verdicts.waiting == [ids[2]]
    assert ledger.requeue(run_id, ["unknown"], ids=verdicts.unproven) == 2
    assert ledger.counts(run_id) == {"planned": 2, "unknown": 1}
    ledger.engine.dispose()
