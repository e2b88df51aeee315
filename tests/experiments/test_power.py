"""What ``campaign plan`` says a test can find: the smallest detectable lift for its sizes."""

from __future__ import annotations

import math

import pytest

from scheduler.experiments import DecisionError, detectable_lift, smallest_detectable_lift
from scheduler.experiments.power import power


def test_the_lift_solves_the_classic_sample_size_formula() -> None:
    """With equal arms, n = (z_{α/2}·√(2p̄q̄) + z_β·√(p₁q₁ + p₂q₂))² / δ² (Fleiss, Levin &
    Paik, no continuity correction) gives back the 2,000 sends per arm."""
    lift = smallest_detectable_lift(2000, 2000, 0.10)
    assert lift is not None and lift == pytest.approx(0.0282, abs=1e-4)
    p1, p2 = 0.10, 0.10 + lift
    pooled = (p1 + p2) / 2
    z_alpha, z_beta = 1.959964, 0.841621
    n = (z_alpha * math.sqrt(2 * pooled * (1 - pooled))
         + z_beta * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / lift**2
    assert n == pytest.approx(2000, rel=1e-3)
    assert power(2000, 2000, 0.10, lift) == pytest.approx(0.8, abs=1e-9)


def test_more_sends_find_smaller_lifts() -> None:
    """Four times the sends: about half the lift."""
    small = smallest_detectable_lift(1000, 1000, 0.12)
    large = smallest_detectable_lift(4000, 4000, 0.12)
    assert small is not None and large is not None
    assert large / small == pytest.approx(0.5, abs=0.03)


def test_several_variants_need_a_larger_lift() -> None:
    """Against two variants each comparison is planned at α/2 (Holm's first step)."""
    one = smallest_detectable_lift(2000, 2000, 0.10)
    two = smallest_detectable_lift(2000, 2000, 0.10, comparisons=2)
    assert one is not None and two is not None and two > one


def test_the_plan_sentence() -> None:
    assert detectable_lift(2000, 2000, 0.10).sentence() == (
        "with 2000 sends per variant, the test finds a reply rate rising from 10.0% to "
        "12.8% (+2.8 points) 8 times in 10, at 95% confidence")
    assert detectable_lift(1500, 3000, 0.2).sentence("click rate").startswith(
        "with 3000 sends per variant and 1500 for the control, the test finds a click rate "
        "rising from 20.0% to ")


def test_too_few_sends_say_so() -> None:
    plan = detectable_lift(10, 10, 0.5)
    assert plan.lift is None
    assert plan.sentence() == ("with 10 sends per variant, the test cannot find even a reply "
                               "rate of 100% 8 times in 10: it needs more sends")


@pytest.mark.parametrize(("args", "message"), [
    ((0, 100, 0.1), "sizes 0 and 100 must be at least 1 send per arm"),
    ((100, 100, 1.5), "base rate 1.5 must be between 0 and 1"),
])
def test_wrong_plans_are_refused(args, message) -> None:
    with pytest.raises(DecisionError, match=message):
        smallest_detectable_lift(*args)
