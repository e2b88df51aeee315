"""Which variant goes to the rest, and the sentence that says why, on fixed counts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from scipy.stats import chi2_contingency

from scheduler.experiments import Arm, Decision, DecisionError, DecisionOutcome, decide
from scheduler.experiments.decision import format_p
from scheduler.experiments.stats import newcombe_interval, wilson_interval

A = Arm(name="A", sends=2000, successes=228, guardrail_events=10)  # 11.4%, 0.5% opt-outs
B_BETTER = Arm(name="B", sends=2000, successes=290, guardrail_events=12)  # 14.5%
B_SAME = Arm(name="B", sends=2000, successes=242, guardrail_events=9)  # 12.1%
B_PUSHY = Arm(name="B", sends=2000, successes=290, guardrail_events=40)  # 14.5%, 2.0%
NOON = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_a_variant_that_beats_the_control_wins_with_its_numbers() -> None:
    decision = decide([A, B_BETTER], control="A", guardrail="opt_out", at=NOON)
    assert (decision.outcome, decision.winner, decision.goes) == (DecisionOutcome.WINNER, "B", "B")
    assert decision.reason == (
        "B wins: its reply rate 14.5% vs A's 11.4% (+3.1 points, 95% CI +1.0 to +5.2), "
        "p = 0.0035 < 0.05")
    [comparison] = decision.comparisons
    scipy = chi2_contingency([[290, 1710], [228, 1772]], correction=False)
    assert comparison.p_value == pytest.approx(scipy.pvalue)
    assert comparison.p_adjusted == comparison.p_value  # one comparison: Holm changes nothing
    assert (comparison.difference_low, comparison.difference_high) == \
        newcombe_interval(290, 2000, 228, 2000, 0.95)
    arm_b = decision.arms[1]
    assert (arm_b.name, arm_b.sends, arm_b.rate, arm_b.is_control) == ("B", 2000, 0.145, False)
    assert (arm_b.rate_low, arm_b.rate_high) == wilson_interval(290, 2000, 0.95)
    assert decision.decided_at == NOON and "no continuity correction" in decision.method


def test_no_clear_winner_sends_the_control_and_says_why() -> None:
    decision = decide([A, B_SAME], control="A")
    assert (decision.outcome, decision.winner, decision.goes) == \
        (DecisionOutcome.NO_CLEAR_WINNER, None, "A")
    assert decision.reason == ("no clear winner: B's reply rate 12.1% vs A's 11.4%, "
                               "p = 0.49 ≥ 0.05; A (the control) goes to the rest")


def test_with_no_clear_winner_the_stated_fallback_goes() -> None:
    decision = decide([A, B_SAME], control="A", fallback="B", metric="read")
    assert decision.goes == "B" and decision.winner is None
    assert decision.reason.endswith("; B (the stated fallback) goes to the rest")
    assert "B's read rate 12.1%" in decision.reason


def test_a_variant_worse_on_the_guardrail_never_wins() -> None:
    """B's replies are significantly higher, and so are its opt-outs (2.0% vs 0.5%)."""
    decision = decide([A, B_PUSHY], control="A", guardrail="opt_out")
    assert (decision.outcome, decision.goes) == (DecisionOutcome.NO_CLEAR_WINNER, "A")
    assert decision.comparisons[0].guardrail_worse
    assert decision.reason == (
        "no clear winner: B's reply rate 14.5% beat A's 11.4% (p = 0.0035) but its opt-out "
        "rate 2.0% is significantly higher than A's 0.50% (p < 0.001); A (the control) goes "
        "to the rest")
    # the same counts without a guardrail: B wins
    assert decide([A, B_PUSHY], control="A").winner == "B"


def test_a_guardrail_failure_hands_the_win_to_the_next_variant() -> None:
    c_fine = Arm(name="C", sends=2000, successes=280, guardrail_events=11)
    decision = decide([A, B_PUSHY, c_fine], control="A", guardrail="opt_out")
    assert decision.winner == "C"
    assert decision.reason.startswith("C wins: its reply rate 14.0% vs A's 11.4%")
    assert decision.reason.endswith(
        "after Holm; B beat A too but its opt-out rate is significantly higher")


def test_a_variant_with_fewer_opt_outs_is_not_held_back() -> None:
    calm = Arm(name="B", sends=2000, successes=290, guardrail_events=0)
    decision = decide([A, calm], control="A", guardrail="opt_out")
    assert decision.winner == "B"
    assert decision.comparisons[0].guardrail_p_value is not None
    assert decision.comparisons[0].guardrail_p_value < 0.05  # significantly *lower*: fine


def test_the_control_wins_when_every_variant_is_significantly_worse() -> None:
    worse = Arm(name="B", sends=2000, successes=150)
    decision = decide([A, worse], control="A")
    assert (decision.outcome, decision.winner, decision.goes) == (DecisionOutcome.WINNER, "A", "A")
    assert decision.reason == ("A (the control) wins with a reply rate of 11.4%: B's 7.5% "
                               "is lower (p < 0.001)")


def test_holm_keeps_a_raw_p_below_alpha_from_winning() -> None:
    """With two variants, B's raw p = 0.044 is adjusted to 0.089 (2 × 0.044): no winner.
    Alone against A, the same B wins."""
    b_edge = Arm(name="B", sends=2000, successes=270)
    c_same = Arm(name="C", sends=2000, successes=230)
    decision = decide([A, b_edge, c_same], control="A")
    comparison = decision.comparisons[0]
    assert comparison.p_value < 0.05 <= comparison.p_adjusted
    assert comparison.p_adjusted == pytest.approx(2 * comparison.p_value)
    assert decision.outcome is DecisionOutcome.NO_CLEAR_WINNER
    assert decision.reason == ("no clear winner: B's reply rate 13.5% vs A's 11.4%, "
                               "p = 0.089 ≥ 0.05 after Holm; A (the control) goes to the rest")
    assert decide([A, b_edge], control="A").winner == "B"


def test_of_two_winning_variants_the_higher_rate_goes_and_the_reason_says_so() -> None:
    c_good = Arm(name="C", sends=2000, successes=280)
    decision = decide([A, B_BETTER, c_good], control="A")
    assert decision.winner == "B"
    assert decision.reason.endswith(
        "after Holm; C also beat A, with a lower rate (not tested against B)")


def test_too_few_sends_decide_nothing_whatever_the_rates() -> None:
    tiny_a = Arm(name="A", sends=200, successes=10)
    tiny_b = Arm(name="B", sends=180, successes=60)
    decision = decide([tiny_a, tiny_b], control="A", min_per_variant=500)
    assert (decision.outcome, decision.winner, decision.goes) == \
        (DecisionOutcome.NOT_ENOUGH_SENDS, None, "A")
    assert decision.reason == ("not enough sends: A had 200 and B 180, under the 500 per "
                               "variant the test needs; A (the control) goes to the rest")
    assert decision.comparisons[0].p_value < 0.001  # the numbers are still there to see


def test_some_variants_worse_and_one_unclear_is_no_clear_winner() -> None:
    worse = Arm(name="C", sends=2000, successes=150)
    decision = decide([A, B_SAME, worse], control="A")
    assert decision.outcome is DecisionOutcome.NO_CLEAR_WINNER
    assert decision.reason == ("no clear winner: B's reply rate 12.1% vs A's 11.4%, "
                               "p = 0.49 ≥ 0.05 after Holm; C is significantly lower; A (the "
                               "control) goes to the rest")


def test_a_decision_survives_storage_as_json() -> None:
    decision = decide([A, B_PUSHY], control="A", guardrail="opt_out", at=NOON)
    assert Decision.model_validate_json(decision.model_dump_json()) == decision


@pytest.mark.parametrize(("p", "shown"), [
    (0.31, "= 0.31"), (0.0496, "= 0.0496"), (0.05, "= 0.05"), (0.0504, "= 0.05"),
    (0.00351, "= 0.0035"), (0.0004, "< 0.001"), (1.0, "= 1")])
def test_p_values_are_shown_on_the_right_side_of_alpha(p, shown) -> None:
    assert format_p(p, 0.05) == shown


@pytest.mark.parametrize(("arms", "control", "message"), [
    ([A], "A", "a test needs at least two variants, not 1"),
    ([A, A], "A", "variant 'A' is named twice"),
    ([A, B_SAME], "Z", r"the control 'Z' is not one of the variants \(A, B\)"),
])
def test_wrong_arms_are_named(arms, control, message) -> None:
    with pytest.raises(DecisionError, match=message):
        decide(arms, control=control)


def test_a_wrong_fallback_or_count_is_named() -> None:
    with pytest.raises(DecisionError, match="the fallback 'C' is not one of the variants"):
        decide([A, B_SAME], control="A", fallback="C")
    with pytest.raises(DecisionError, match="variant 'B': 12 guardrail events out of 10"):
        Arm(name="B", sends=10, successes=1, guardrail_events=12)


def test_tables_too_small_for_the_approximation_carry_a_caution() -> None:
    """2 vs 6 replies of 40 each: the smallest expected cell is 40 × 8 / 80 = 4.0."""
    small = decide([Arm(name="A", sends=40, successes=2), Arm(name="B", sends=40, successes=6)],
                   control="A")
    assert small.comparisons[0].smallest_expected == 4.0
    assert small.cautions == ["B vs A: only 4.0 expected in the smallest cell of the 2×2 "
                              "table (under 5): the p-value is approximate"]
    assert decide([A, B_SAME], control="A").cautions == []
