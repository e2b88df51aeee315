"""The health score and its verdicts as pure functions."""

from __future__ import annotations

import pytest

from scheduler.dispatch.health import (
    MIN_FACTOR,
    RECOVERY_STEP,
    Signals,
    factor_for,
    judge,
    score,
    why,
)
from scheduler.ledger.states import SenderStatus as S


def test_a_sender_with_no_trouble_scores_100_and_replies_cannot_hide_trouble() -> None:
    assert score(Signals(sends=200)) == 100.0
    assert score(Signals(sends=200, replies=100)) == 100.0
    # 1 % opt-outs cost 10 points; replies give back at most 10
    assert score(Signals(sends=200, opt_outs=2)) == pytest.approx(90.0)
    assert score(Signals(sends=200, opt_outs=2, replies=200)) == pytest.approx(100.0)
    assert score(Signals(sends=200, opt_outs=20, replies=200)) == pytest.approx(10.0)


def test_few_sends_say_little_rates_are_taken_over_fifty() -> None:
    # one opt-out among the first three sends: 1 / 50, not 1 / 3: throttled, not paused
    assert score(Signals(sends=3, opt_outs=1)) == pytest.approx(80.0)
    assert judge(S.HEALTHY, 1.0, Signals(sends=3, opt_outs=1), warming=False).state == \
        S.HEALTHY
    assert judge(S.HEALTHY, 1.0, Signals(sends=30, opt_outs=3), warming=False).state == \
        S.THROTTLED  # 60 points: 40, at the edge
    assert judge(S.HEALTHY, 1.0, Signals(sends=30, opt_outs=4), warming=False).state == \
        S.PAUSED
    assert score(Signals(sends=3, rate_limited=1)) == pytest.approx(100 - 150 / 10)


def test_each_signal_costs_its_documented_weight() -> None:
    base = Signals(sends=100)
    costs = {name: 100 - score(Signals(**{**base.__dict__, name: 10}))
             for name in ("opt_outs", "never_sent", "rate_limited", "undelivered",
                          "server_errors", "refused")}
    assert costs == pytest.approx({"opt_outs": 100.0, "never_sent": 20.0,
                                   "rate_limited": 15.0, "undelivered": 8.0,
                                   "server_errors": 10.0, "refused": 6.0})


def test_the_factor_falls_linearly_from_70_to_40() -> None:
    assert factor_for(85) == 1.0 and factor_for(70) == 1.0
    assert factor_for(55) == pytest.approx(MIN_FACTOR + (1 - MIN_FACTOR) / 2)
    assert factor_for(40) == MIN_FACTOR and factor_for(10) == MIN_FACTOR


def test_a_low_score_pauses_with_its_causes_and_a_middling_one_throttles() -> None:
    storm = Signals(sends=100, rate_limited=30)  # 45 points
    verdict = judge(S.HEALTHY, 1.0, storm, warming=False)
    assert verdict.state == S.THROTTLED and verdict.factor < 1.0
    assert verdict.reason == "score 55: 429s 30.0% of 100 sends"
    complaints = Signals(sends=50, opt_outs=4)  # 8 % opt-outs
    paused = judge(S.HEALTHY, 1.0, complaints, warming=False)
    assert (paused.state, paused.factor) == (S.PAUSED, 0.0)
    assert paused.reason == "score 20: opt-outs 8.0% of 50 sends"


def test_a_throttled_sender_recovers_step_by_step_never_in_one_jump() -> None:
    clean = Signals(sends=100)
    first = judge(S.THROTTLED, 0.4, clean, warming=False)
    assert first.state == S.THROTTLED and first.factor == pytest.approx(0.4 + RECOVERY_STEP)
    factor, steps = 0.4, 0
    while factor < 1.0:
        verdict = judge(S.THROTTLED, factor, clean, warming=True)
        factor, steps = verdict.factor, steps + 1
    assert steps == 4 and verdict.state == S.WARMING  # back on its ramp, not "healthy"


def test_only_a_person_or_a_reconnection_brings_back_a_held_sender() -> None:
    for held in (S.PAUSED, S.RETIRED, S.DISCONNECTED, S.LOGGED_OUT):
        verdict = judge(held, 0.0, Signals(sends=500, replies=100), warming=False)
        assert verdict.state == held and verdict.factor == 0.0


def test_why_names_the_two_main_causes() -> None:
    signals = Signals(sends=100, opt_outs=3, never_sent=10, refused=1)
    assert why(signals, score(signals)) == (
        "score 49: opt-outs 3.0%, sends never confirmed 10.0% of 100 sends")


def test_429s_and_server_errors_throttle_but_never_pause_alone() -> None:
    outage = Signals(sends=100, rate_limited=60, server_errors=80)
    assert score(outage) == pytest.approx(100 - 55)
    verdict = judge(S.HEALTHY, 1.0, outage, warming=False)
    assert verdict.state == S.THROTTLED and verdict.factor == pytest.approx(
        factor_for(45))
