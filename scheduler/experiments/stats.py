"""The statistics of an A/B test on rates (pure arithmetic, the standard library only).

Each variant is compared with the control on a rate (replies per send, say):

- **The test** is Pearson's chi-squared test of independence on the 2×2 table (arm ×
  success/failure), with 1 degree of freedom and *no* continuity (Yates) correction. Its
  statistic is the square of the two-sided two-proportion z statistic with the pooled
  standard error, so the two tests are the same test and give the same p-value:
  ``p = P(χ²₁ ≥ X²) = P(|Z| ≥ √X²) = erfc(√(X²/2))``. Yates' correction is left out on
  purpose: it makes the test conservative (its real false-positive rate is well below the
  nominal one), and at the sizes of a campaign's test share the uncorrected statistic is
  accurate (Agresti 2002; D'Agostino, Chase & Belanger 1988).
- **The interval of each rate** is Wilson's score interval (Wilson 1927), which keeps
  close to its nominal coverage for small rates and small sizes, unlike the Wald interval
  p ± z·√(p(1−p)/n) (Newcombe 1998a; Brown, Cai & DasGupta 2001).
- **The interval of a difference** of two rates is Newcombe's hybrid score interval, his
  method 10, built from the two Wilson intervals (Newcombe 1998b).
- **Several variants** against one control make several comparisons: their p-values are
  adjusted with Holm's step-down method (Holm 1979), which keeps the chance of declaring
  any false difference (the family-wise error rate) at most α = 1 − confidence, under any
  dependence between the comparisons, and is uniformly more powerful than Bonferroni.

References:

- Agresti, A. (2002). *Categorical Data Analysis*, 2nd ed. Wiley.
- Brown, L. D., Cai, T. T., DasGupta, A. (2001). Interval estimation for a binomial
  proportion. *Statistical Science* 16(2), 101–133.
- D'Agostino, R. B., Chase, W., Belanger, A. (1988). The appropriateness of some common
  procedures for testing the equality of two independent binomial populations. *The
  American Statistician* 42(3), 198–202.
- Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian
  Journal of Statistics* 6(2), 65–70.
- Newcombe, R. G. (1998a). Two-sided confidence intervals for the single proportion:
  comparison of seven methods. *Statistics in Medicine* 17, 857–872.
- Newcombe, R. G. (1998b). Interval estimation for the difference between independent
  proportions: comparison of eleven methods. *Statistics in Medicine* 17, 873–890.
- Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
  inference. *Journal of the American Statistical Association* 22, 209–212.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import NamedTuple

from .exceptions import DecisionError

#: What every function here states of its method (shown beside a decision's numbers).
METHOD = ("Pearson chi-squared test, 1 df, no continuity correction (the two-sided "
          "two-proportion z-test); Wilson intervals for each rate, Newcombe's hybrid score "
          "interval for a difference; Holm's step-down correction across the comparisons "
          "with the control")


class ChiSquared(NamedTuple):
    """The outcome of the test on a 2×2 table: Pearson's X² (1 df) and its p-value."""

    statistic: float
    p_value: float


class Interval(NamedTuple):
    """A two-sided confidence interval (for a rate, or for a difference of rates)."""

    low: float
    high: float


def _check_counts(successes: int, n: int) -> None:
    """Raise unless ``0 ≤ successes ≤ n``."""
    if n < 0 or successes < 0 or successes > n:
        raise DecisionError(f"{successes} successes out of {n} sends is not a count "
                            "(it must be between 0 and the number of sends)")


def z_value(confidence: float) -> float:
    """The standard normal quantile z with P(|Z| ≤ z) = ``confidence`` (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise DecisionError(f"confidence {confidence} must be between 0 and 1 (say 0.95)")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def alpha_of(confidence: float) -> float:
    """The significance level α = 1 − ``confidence``, rounded to 12 decimals so that
    0.95 gives exactly 0.05 (a p-value of 0.05 is then not below it)."""
    z_value(confidence)  # checks it
    return round(1.0 - confidence, 12)


def two_proportion_test(successes_a: int, n_a: int, successes_b: int, n_b: int) -> ChiSquared:
    """Pearson's chi-squared test (1 df, no continuity correction) of "arm A and arm B have
    the same rate", from each arm's successes and sends.

    ``X² = N·(a·d − b·c)² / (n_a·n_b·S·F)`` with the table ``[[a, b], [c, d]]`` of
    successes and failures per arm, ``S`` and ``F`` the total successes and failures and
    ``N`` the total sends; the counts are multiplied exactly (as integers). When the test
    has nothing to compare (an arm without sends, or no success or no failure at all, where
    X² is 0/0) the statistic is 0 and the p-value 1: no evidence of a difference.
    """
    _check_counts(successes_a, n_a)
    _check_counts(successes_b, n_b)
    a, b = successes_a, n_a - successes_a
    c, d = successes_b, n_b - successes_b
    margins = n_a * n_b * (a + c) * (b + d)
    if margins == 0:
        return ChiSquared(0.0, 1.0)
    statistic = (n_a + n_b) * (a * d - b * c) ** 2 / margins
    return ChiSquared(statistic, math.erfc(math.sqrt(statistic / 2.0)))


def smallest_expected(successes_a: int, n_a: int, successes_b: int, n_b: int) -> float:
    """The smallest expected count of the 2×2 table under "no difference" (smaller arm ×
    smaller of total successes and failures / total sends). Under 5 (Cochran's rule) the
    chi-squared p-value is only a rough approximation; Fisher's exact test would be the
    textbook choice there (Agresti 2002)."""
    _check_counts(successes_a, n_a)
    _check_counts(successes_b, n_b)
    total = n_a + n_b
    if total == 0:
        return 0.0
    successes = successes_a + successes_b
    return min(n_a, n_b) * min(successes, total - successes) / total


def wilson_interval(successes: int, n: int, confidence: float) -> Interval:
    """Wilson's score interval for the rate ``successes / n`` (without continuity
    correction); ``(0, 1)`` for an arm without sends (it says nothing)."""
    _check_counts(successes, n)
    z = z_value(confidence)
    if n == 0:
        return Interval(0.0, 1.0)
    p = successes / n
    z2 = z * z
    scale = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / scale
    half = z / scale * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high)


def newcombe_interval(successes_a: int, n_a: int, successes_b: int, n_b: int,
                      confidence: float) -> Interval:
    """Newcombe's hybrid score interval (method 10) for the difference of rates
    ``p_a − p_b``: with ``(l, u)`` each arm's Wilson interval,
    ``p_a − p_b − √((p_a − l_a)² + (u_b − p_b)²)`` to
    ``p_a − p_b + √((u_a − p_a)² + (p_b − l_b)²)``; ``(−1, 1)`` if an arm has no sends."""
    low_a, high_a = wilson_interval(successes_a, n_a, confidence)
    low_b, high_b = wilson_interval(successes_b, n_b, confidence)
    if n_a == 0 or n_b == 0:
        return Interval(-1.0, 1.0)
    p_a, p_b = successes_a / n_a, successes_b / n_b
    difference = p_a - p_b
    below = math.hypot(p_a - low_a, high_b - p_b)
    above = math.hypot(high_a - p_a, p_b - low_b)
    return Interval(max(-1.0, difference - below), min(1.0, difference + above))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    With the m p-values sorted ascending, the i-th smallest (i from 1) becomes
    ``max over j ≤ i of min(1, (m − j + 1)·p_(j))``; a comparison is significant at level α
    when its adjusted p-value is below α, which is Holm's procedure (reject in order while
    ``p_(i) < α / (m − i + 1)``, stop at the first that is not).
    """
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise DecisionError(f"p-value {p} is not between 0 and 1")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
