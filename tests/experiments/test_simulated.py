"""The decision rule over many simulated experiments (seeded, so the run is repeatable):
with no real difference it declares a winner about 1 − confidence of the time, and a lift
of the size ``campaign plan`` promises is found about as often as promised.

Tolerances are three binomial standard deviations of a rate over 1,000 experiments,
√(r(1 − r)/1000): ±0.021 around 0.05 and ±0.038 around 0.80; another seed passes with
probability about 0.997.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from scheduler.experiments import Arm, decide, smallest_detectable_lift

EXPERIMENTS = 1000
SEED = 20261127


def spread(rate: float) -> float:
    """Three binomial standard deviations of a rate measured over EXPERIMENTS runs."""
    return 3 * math.sqrt(rate * (1 - rate) / EXPERIMENTS)


def simulate(rng: np.random.Generator, rates: list[float], sends: int) -> list[list[Arm]]:
    """EXPERIMENTS experiments with one arm per rate (A the control, then B, C, …)."""
    counts = rng.binomial(sends, rates, size=(EXPERIMENTS, len(rates)))
    return [[Arm(name=chr(ord("A") + i), sends=sends, successes=int(s))
             for i, s in enumerate(row)] for row in counts]


@pytest.mark.parametrize(("sends", "rate"), [(2000, 0.10), (400, 0.05), (500, 0.30)])
def test_a_a_experiments_declare_a_false_winner_at_about_alpha(sends, rate) -> None:
    """Two identical arms: a winner (either one) in 5% ± 2.1 points of 1,000 experiments."""
    experiments = simulate(np.random.default_rng(SEED), [rate, rate], sends)
    winners = Counter(decide(arms, control="A", confidence=0.95).winner
                      for arms in experiments)
    false_rate = (EXPERIMENTS - winners[None]) / EXPERIMENTS
    assert abs(false_rate - 0.05) <= spread(0.05), winners
    assert winners["A"] > 0 and winners["B"] > 0  # both ways: the test is two-sided


def test_holm_keeps_false_winners_at_most_alpha_with_three_arms() -> None:
    """Three identical arms: any false winner at most 5% (+2.1 points); without Holm's
    correction the same experiments would cross p < 0.05 more often than with it."""
    experiments = simulate(np.random.default_rng(SEED), [0.10, 0.10, 0.10], 2000)
    decisions = [decide(arms, control="A") for arms in experiments]
    false_rate = sum(d.winner is not None for d in decisions) / EXPERIMENTS
    assert false_rate <= 0.05 + spread(0.05)
    uncorrected = sum(any(c.p_value < 0.05 for c in d.comparisons)
                      for d in decisions) / EXPERIMENTS
    corrected = sum(any(c.p_adjusted < 0.05 for c in d.comparisons)
                    for d in decisions) / EXPERIMENTS
    assert uncorrected > 0.05 + spread(0.05) > corrected


def test_the_planned_lift_is_found_as_often_as_planned() -> None:
    """2,000 sends per arm at a 10% base rate: the plan says +2.8 points is found 8 times
    in 10; over 1,000 experiments with that lift B wins 80% ± 3.8 points of the time."""
    lift = smallest_detectable_lift(2000, 2000, 0.10, confidence=0.95, target_power=0.8)
    assert lift is not None
    experiments = simulate(np.random.default_rng(SEED), [0.10, 0.10 + lift], 2000)
    found = sum(decide(arms, control="A").winner == "B"
                for arms in experiments) / EXPERIMENTS
    assert abs(found - 0.80) <= spread(0.80), found


def test_a_guardrail_with_no_real_difference_rarely_blocks_a_real_winner() -> None:
    """B really lifts replies (+4 points) and has the same opt-out rate as A: the veto
    (uncorrected, two-sided at 5%) blocks it in about 2.5% of experiments, no more."""
    rng = np.random.default_rng(SEED)
    replies = rng.binomial(2000, [0.10, 0.14], size=(EXPERIMENTS, 2))
    opt_outs = rng.binomial(2000, [0.01, 0.01], size=(EXPERIMENTS, 2))
    vetoed = 0
    for (reply_a, reply_b), (out_a, out_b) in zip(replies, opt_outs, strict=True):
        arms = [Arm(name="A", sends=2000, successes=int(reply_a), guardrail_events=int(out_a)),
                Arm(name="B", sends=2000, successes=int(reply_b), guardrail_events=int(out_b))]
        vetoed += decide(arms, control="A", guardrail="opt_out").comparisons[0].guardrail_worse
    assert vetoed / EXPERIMENTS <= 0.025 + spread(0.025)
