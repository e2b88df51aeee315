"""The test and intervals of an A/B test, on fixed examples: checked against scipy
(``chi2_contingency(correction=False)``, ``binomtest(...).proportion_ci("wilson")``) and
against the values Newcombe (1998) published for his worked examples."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest, chi2_contingency

from scheduler.experiments import DecisionError
from scheduler.experiments.stats import (
    alpha_of,
    holm,
    newcombe_interval,
    smallest_expected,
    two_proportion_test,
    wilson_interval,
    z_value,
)

#: (successes A, sends A, successes B, sends B): campaign-sized tables, a lopsided split,
#: small counts, and the Physicians' Health Study's aspirin table (MI: 189 of 11,034 on
#: placebo, 104 of 11,037 on aspirin), a classic of the textbooks.
TABLES = [(228, 2000, 242, 2000), (120, 1000, 151, 1000), (31, 250, 9, 120),
          (3, 17, 9, 21), (189, 11034, 104, 11037), (5000, 40000, 5210, 40500)]


@pytest.mark.parametrize("table", TABLES)
def test_the_chi_squared_test_is_scipys_without_continuity_correction(table) -> None:
    s_a, n_a, s_b, n_b = table
    ours = two_proportion_test(s_a, n_a, s_b, n_b)
    theirs = chi2_contingency([[s_a, n_a - s_a], [s_b, n_b - s_b]], correction=False)
    assert theirs.dof == 1
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)
    yates = chi2_contingency([[s_a, n_a - s_a], [s_b, n_b - s_b]], correction=True)
    assert ours.p_value < yates.pvalue  # it is the uncorrected test, not Yates'


def test_the_aspirin_table_is_highly_significant() -> None:
    """189/11,034 vs 104/11,037: X² = 25.01 (z = 5.00), p = 5.7e-7."""
    test = two_proportion_test(189, 11034, 104, 11037)
    assert round(test.statistic, 2) == 25.01
    assert test.p_value == pytest.approx(5.69e-7, rel=1e-3)


@pytest.mark.parametrize("table", TABLES)
def test_it_is_the_two_sided_pooled_z_test(table) -> None:
    """X² = z² with z = (p_a − p_b) / √(p̄(1 − p̄)(1/n_a + 1/n_b)); p = 2·(1 − Φ(|z|))."""
    s_a, n_a, s_b, n_b = table
    pooled = (s_a + s_b) / (n_a + n_b)
    z = (s_a / n_a - s_b / n_b) / math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    test = two_proportion_test(s_a, n_a, s_b, n_b)
    assert test.statistic == pytest.approx(z * z, rel=1e-9)
    assert test.p_value == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), rel=1e-9)


@pytest.mark.parametrize("table", [(0, 500, 0, 400), (500, 500, 400, 400), (0, 0, 3, 10)])
def test_a_table_with_nothing_to_compare_has_p_1(table) -> None:
    """No success at all, no failure at all, or an arm without sends: X² is 0/0 (scipy
    refuses the table); the test reports no evidence of a difference."""
    assert two_proportion_test(*table) == (0.0, 1.0)


#: Newcombe (1998a), Table I: 95% Wilson score intervals (no continuity correction).
WILSON_PUBLISHED = [((81, 263), (0.2553, 0.3662)), ((15, 148), (0.0624, 0.1605)),
                    ((0, 20), (0.0, 0.1611)), ((1, 29), (0.0061, 0.1718))]


@pytest.mark.parametrize(("counts", "published"), WILSON_PUBLISHED)
def test_wilson_intervals_match_newcombes_published_values(counts, published) -> None:
    low, high = wilson_interval(*counts, 0.95)
    assert (round(low, 4), round(high, 4)) == published


@pytest.mark.parametrize(("successes", "n", "confidence"), [
    (228, 2000, 0.95), (0, 50, 0.95), (50, 50, 0.9), (7, 13, 0.99), (1234, 9876, 0.8)])
def test_wilson_intervals_match_scipy(successes, n, confidence) -> None:
    theirs = binomtest(successes, n).proportion_ci(confidence_level=confidence,
                                                   method="wilson")
    ours = wilson_interval(successes, n, confidence)
    assert ours.low == pytest.approx(theirs.low, abs=1e-12)
    assert ours.high == pytest.approx(theirs.high, abs=1e-12)


#: Newcombe (1998b), Table II, method 10 (hybrid score, no continuity correction): 95%
#: intervals for p_a − p_b in his eight worked examples.
NEWCOMBE_PUBLISHED = [
    ((56, 70, 48, 80), (0.0524, 0.3339)), ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)), ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)), ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)), ((10, 10, 0, 10), (0.6075, 1.0000))]


@pytest.mark.parametrize(("counts", "published"), NEWCOMBE_PUBLISHED)
def test_newcombe_intervals_match_his_published_values(counts, published) -> None:
    low, high = newcombe_interval(*counts, 0.95)
    assert (round(low, 4), round(high, 4)) == published


def test_the_difference_interval_turns_with_the_arms() -> None:
    """B − A is the mirror of A − B."""
    forward = newcombe_interval(228, 2000, 290, 2000, 0.95)
    backward = newcombe_interval(290, 2000, 228, 2000, 0.95)
    assert forward.low == pytest.approx(-backward.high) and \
        forward.high == pytest.approx(-backward.low)


def test_holm_adjusts_step_down_and_stops_at_the_first_kept_hypothesis() -> None:
    """Sorted 0.005, 0.01, 0.03, 0.04 become 4·0.005, 3·0.01, 2·0.03 and max(1·0.04, 0.06):
    at α = 0.05, 0.03 (raw) is not rejected (0.03 ≥ 0.05/2), so neither is 0.04, which
    uncorrected testing would have called significant."""
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [p < 0.05 for p in adjusted] == [True, False, False, True]
    assert holm([0.01, 0.02, 0.03]) == pytest.approx([0.03, 0.04, 0.04])
    assert holm([0.7, 0.9]) == [1.0, 1.0]
    assert holm([0.2]) == [0.2] and holm([]) == []


def test_the_confidence_gives_z_and_alpha() -> None:
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert alpha_of(0.95) == 0.05 and alpha_of(0.9) == 0.1


@pytest.mark.parametrize("confidence", [0.0, 1.0, 95, -0.5])
def test_a_confidence_outside_0_to_1_is_refused(confidence) -> None:
    with pytest.raises(DecisionError, match=f"confidence {confidence} must be between 0 and 1"):
        wilson_interval(3, 10, confidence)


def test_counts_that_are_not_counts_are_refused() -> None:
    with pytest.raises(DecisionError, match="12 successes out of 10 sends is not a count"):
        two_proportion_test(12, 10, 3, 10)


def test_the_smallest_expected_count_is_cochrans_quantity() -> None:
    """Each cell's expected count is its row total × column total / N: the smallest here is
    the smaller arm (17 sends) × the rarer outcome (12 successes) / 38 sends."""
    theirs = chi2_contingency([[3, 14], [9, 12]], correction=False).expected_freq
    assert smallest_expected(3, 17, 9, 21) == pytest.approx(theirs.min())
    assert smallest_expected(0, 0, 0, 0) == 0.0
