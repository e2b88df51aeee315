"""What a test of a given size can find: its power, and the smallest lift it detects (pure).

For the test of :mod:`scheduler.experiments.stats` (two-sided, pooled standard error) the
normal approximation gives the power to detect a rate ``p₂ = p₁ + δ`` against a control at
``p₁``, with ``n₁`` and ``n₂`` sends (Fleiss, Levin & Paik 2003, ch. 4)::

    power = Φ((|δ| − z·σ₀) / σ₁) + Φ((−|δ| − z·σ₀) / σ₁)
    σ₀ = √(p̄(1 − p̄)(1/n₁ + 1/n₂)),  p̄ = (n₁p₁ + n₂p₂)/(n₁ + n₂)   (under "no difference")
    σ₁ = √(p₁(1 − p₁)/n₁ + p₂(1 − p₂)/n₂)                          (under the lift)

with ``z`` the two-sided quantile at α/m for m comparisons with the control: Holm's first
step, so the figure is conservative (slightly too pessimistic) for the later ones.
``campaign plan`` prints the smallest lift δ > 0 whose power is at least 0.8.

Reference: Fleiss, J. L., Levin, B., Paik, M. C. (2003). *Statistical Methods for Rates
and Proportions*, 3rd ed. Wiley.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from pydantic import BaseModel, ConfigDict

from . import stats
from .exceptions import DecisionError

_NORMAL = NormalDist()


def power(n_control: int, n_variant: int, base_rate: float, lift: float, *,
          confidence: float = 0.95, comparisons: int = 1) -> float:
    """The chance that the test finds a variant at ``base_rate + lift`` significantly
    different from a control at ``base_rate`` (normal approximation, see the module)."""
    _check(n_control, n_variant, base_rate, comparisons)
    rate = base_rate + lift
    if not 0.0 <= rate <= 1.0:
        raise DecisionError(f"a lift of {lift:+.4f} on a rate of {base_rate:.4f} is not a "
                            "rate between 0 and 1")
    if lift == 0.0:
        return stats.alpha_of(confidence) / comparisons
    z = stats.z_value(1.0 - stats.alpha_of(confidence) / comparisons)
    pooled = (n_control * base_rate + n_variant * rate) / (n_control + n_variant)
    sigma0 = math.sqrt(pooled * (1.0 - pooled) * (1.0 / n_control + 1.0 / n_variant))
    sigma1 = math.sqrt(base_rate * (1.0 - base_rate) / n_control
                       + rate * (1.0 - rate) / n_variant)
    if sigma1 == 0.0:  # both rates at 0 or 1: the difference is certain
        return 1.0
    size = abs(lift)
    return (_NORMAL.cdf((size - z * sigma0) / sigma1)
            + _NORMAL.cdf((-size - z * sigma0) / sigma1))


def smallest_detectable_lift(n_control: int, n_variant: int, base_rate: float, *,
                             confidence: float = 0.95, target_power: float = 0.8,
                             comparisons: int = 1) -> float | None:
    """The smallest rise δ > 0 of ``base_rate`` that the test finds with ``target_power``
    (absolute: 0.021 is 2.1 percentage points); ``None`` when even a rate of 100% is not
    found that often (too few sends)."""
    _check(n_control, n_variant, base_rate, comparisons)
    if not 0.0 < target_power < 1.0:
        raise DecisionError(f"power {target_power} must be between 0 and 1 (say 0.8)")
    if base_rate >= 1.0:
        return None

    def enough(lift: float) -> bool:
        return power(n_control, n_variant, base_rate, lift, confidence=confidence,
                     comparisons=comparisons) >= target_power

    low, high = 0.0, 1.0 - base_rate
    if not enough(high):
        return None
    for _ in range(60):  # the power rises with the lift: bisect to ~1e-18
        middle = (low + high) / 2.0
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


class DetectableLift(BaseModel):
    """What ``campaign plan`` prints about a test: with these sizes and this base rate,
    the smallest lift found ``power`` of the time at ``confidence``."""

    model_config = ConfigDict(frozen=True)

    n_control: int
    n_variant: int
    base_rate: float
    lift: float | None
    confidence: float
    power: float
    comparisons: int

    def sentence(self, rate_name: str = "reply rate") -> str:
        """``with 2000 sends per variant, the test finds a reply rate rising from 10.0% to
        12.7% (+2.7 points) 8 times in 10, at 95% confidence``."""
        sizes = (f"{self.n_variant} sends per variant" if self.n_variant == self.n_control
                 else f"{self.n_variant} sends per variant and {self.n_control} for the "
                      "control")
        often = f"{self.power * 10:g} times in 10" if (self.power * 10).is_integer() \
            else f"{self.power:.0%} of the time"
        if self.lift is None:
            return (f"with {sizes}, the test cannot find even a {rate_name} of 100% "
                    f"{often}: it needs more sends")
        return (f"with {sizes}, the test finds a {rate_name} rising from "
                f"{self.base_rate:.1%} to {self.base_rate + self.lift:.1%} "
                f"(+{self.lift * 100:.1f} points) {often}, at {self.confidence:.0%} "
                "confidence")


def detectable_lift(n_control: int, n_variant: int, base_rate: float, *,
                    confidence: float = 0.95, target_power: float = 0.8,
                    comparisons: int = 1) -> DetectableLift:
    """:func:`smallest_detectable_lift` with its inputs, for the plan to show."""
    lift = smallest_detectable_lift(n_control, n_variant, base_rate, confidence=confidence,
                                    target_power=target_power, comparisons=comparisons)
    return DetectableLift(n_control=n_control, n_variant=n_variant, base_rate=base_rate,
                          lift=lift, confidence=confidence, power=target_power,
                          comparisons=comparisons)


def _check(n_control: int, n_variant: int, base_rate: float, comparisons: int) -> None:
    """Raise a :class:`DecisionError` unless the sizes and the rate can be planned with."""
    if n_control < 1 or n_variant < 1:
        raise DecisionError(f"sizes {n_control} and {n_variant} must be at least 1 send "
                            "per arm")
    if not 0.0 <= base_rate <= 1.0:
        raise DecisionError(f"base rate {base_rate} must be between 0 and 1 (say 0.12)")
    if comparisons < 1:
        raise DecisionError(f"{comparisons} comparisons: there must be at least one")
