"""Which variant of a test goes to the rest of the audience, and why, in plain words (pure).

:func:`decide` compares every variant with the control on the experiment's metric (the
test and intervals of :mod:`scheduler.experiments.stats`), at ``confidence`` (α = 1 −
confidence), with Holm's correction when there are several variants:

- **A variant wins** when its rate is significantly *higher* than the control's (Holm-
  adjusted p < α), and it is not significantly worse on the guardrail. Of several such
  variants the one with the highest rate goes; they were not tested against each other,
  and the reason says so.
- **The control wins** when every variant's rate is significantly *lower* than its own.
- **No clear winner** otherwise: the control goes, or the campaign's stated fallback.
- **Not enough sends**: an arm with fewer sends than ``min_per_variant`` means no test is
  trusted (the numbers are still computed and shown); the control or the fallback goes.

The guardrail (the opt-out rate, say) is a veto, not a goal: a variant whose guardrail
rate is higher than the control's with a raw p-value below α never wins. Its p-values are
deliberately *not* corrected for several variants: a false alarm there only keeps the
control, which is the safe side, while a correction would let more harm through.

A run with two arms and no difference declares a false winner (either arm) with
probability α; with more arms Holm keeps the chance of any false winner at most α.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, model_validator

from . import stats
from .exceptions import DecisionError

#: How a metric is named in a sentence ("B's reply rate 12.1%").
RATE_NAMES = {"reply": "reply rate", "read": "read rate", "click": "click rate",
              "delivered": "delivery rate", "answered": "answer rate",
              "opt_out": "opt-out rate"}


def rate_name(metric: str) -> str:
    """``reply`` → ``reply rate``; an unlisted metric → ``<metric> rate``."""
    return RATE_NAMES.get(metric, f"{metric.replace('_', ' ')} rate")


def percent(rate: float) -> str:
    """``0.1214`` → ``12.1%`` (two decimals under 1%: ``0.0042`` → ``0.42%``)."""
    return f"{rate * 100:.2f}%" if 0.0 < rate < 0.01 else f"{rate * 100:.1f}%"


def points(difference: float) -> str:
    """A difference of rates in percentage points with its sign: ``+2.8``, ``-0.4``."""
    return f"{difference * 100:+.1f}"


def format_p(p: float, alpha: float) -> str:
    """A p-value for a sentence, with as many digits as it takes to be on the right side of
    ``alpha`` when compared with it (``0.0496`` is ``0.0496``, never ``0.05``)."""
    if p < 0.001 <= alpha:
        return "< 0.001"
    for digits in (2, 3, 4, 6):
        shown = f"{p:.{digits}g}"
        if (float(shown) < alpha) == (p < alpha):
            return f"= {shown}"
    return f"= {p!r}"


class Arm(BaseModel):
    """One variant's counts at decision time: sends, successes on the metric (replies, …)
    and events on the guardrail (opt-outs, …)."""

    model_config = ConfigDict(frozen=True)

    name: str
    sends: int
    successes: int
    guardrail_events: int = 0

    @model_validator(mode="after")
    def _counts(self) -> Arm:
        """Counts are whole, not negative, and at most the sends."""
        if not self.name.strip():
            raise DecisionError("a variant has an empty name")
        for what, count in (("successes", self.successes),
                            ("guardrail events", self.guardrail_events)):
            if not 0 <= count <= self.sends:
                raise DecisionError(f"variant {self.name!r}: {count} {what} out of "
                                    f"{self.sends} sends is not a count")
        return self


class ArmResult(BaseModel):
    """An arm as the decision shows it: its counts, its rate with the rate's Wilson
    interval, and its guardrail rate."""

    model_config = ConfigDict(frozen=True)

    name: str
    is_control: bool
    sends: int
    successes: int
    rate: float
    rate_low: float
    rate_high: float
    guardrail_events: int
    guardrail_rate: float


class Comparison(BaseModel):
    """One variant against the control: the difference of rates (variant − control) with
    its Newcombe interval, the chi-squared statistic and the raw and Holm-adjusted
    p-values; and the guardrail's difference, raw p-value and verdict."""

    model_config = ConfigDict(frozen=True)

    variant: str
    control: str
    difference: float
    difference_low: float
    difference_high: float
    statistic: float
    p_value: float
    p_adjusted: float
    significant: bool
    guardrail_difference: float | None = None
    guardrail_p_value: float | None = None
    guardrail_worse: bool = False
    #: The smallest expected count of the metric's 2×2 table (under 5: p is approximate).
    smallest_expected: float = 0.0


class DecisionOutcome(StrEnum):
    """What the test decided."""

    WINNER = "winner"
    NO_CLEAR_WINNER = "no_clear_winner"
    NOT_ENOUGH_SENDS = "not_enough_sends"


class Decision(BaseModel):
    """The decision of a test with all its numbers: who won (if anyone), who goes to the
    rest of the audience, why in one sentence, and how it was computed."""

    model_config = ConfigDict(frozen=True)

    outcome: DecisionOutcome
    winner: str | None
    goes: str
    reason: str
    metric: str
    guardrail: str | None
    control: str
    confidence: float
    min_per_variant: int
    arms: list[ArmResult]
    comparisons: list[Comparison]
    method: str = stats.METHOD
    decided_at: datetime | None = None
    #: What to read the numbers with care for (counts too small for the approximation).
    cautions: list[str] = []


def _check(arms: Sequence[Arm], control: str, fallback: str | None,
           min_per_variant: int) -> None:
    """Raise a :class:`DecisionError` naming what is wrong with the arms or settings."""
    names = [arm.name for arm in arms]
    if len(arms) < 2:
        raise DecisionError(f"a test needs at least two variants, not {len(arms)}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DecisionError(f"variant {duplicates[0]!r} is named twice")
    for role, name in (("control", control), ("fallback", fallback)):
        if name is not None and name not in names:
            raise DecisionError(f"the {role} {name!r} is not one of the variants "
                                f"({', '.join(names)})")
    if min_per_variant < 0:
        raise DecisionError(f"min_per_variant {min_per_variant} must not be negative")


def _result(arm: Arm, control: str, confidence: float) -> ArmResult:
    """An arm's rates and the rate's interval."""
    low, high = stats.wilson_interval(arm.successes, arm.sends, confidence)
    return ArmResult(name=arm.name, is_control=arm.name == control, sends=arm.sends,
                     successes=arm.successes,
                     rate=arm.successes / arm.sends if arm.sends else 0.0,
                     rate_low=low, rate_high=high, guardrail_events=arm.guardrail_events,
                     guardrail_rate=arm.guardrail_events / arm.sends if arm.sends else 0.0)


def _compare(variant: Arm, control: Arm, confidence: float, test: stats.ChiSquared,
             p_adjusted: float, guardrail: bool) -> Comparison:
    """``variant`` against ``control``, its test and Holm-adjusted p-value already known."""
    alpha = stats.alpha_of(confidence)
    low, high = stats.newcombe_interval(variant.successes, variant.sends,
                                        control.successes, control.sends, confidence)
    difference = (variant.successes / variant.sends if variant.sends else 0.0) - (
        control.successes / control.sends if control.sends else 0.0)
    guard_difference = guard_p = None
    if guardrail:
        guard_p = stats.two_proportion_test(variant.guardrail_events, variant.sends,
                                            control.guardrail_events, control.sends).p_value
        guard_difference = (variant.guardrail_events / variant.sends if variant.sends
                            else 0.0) - (control.guardrail_events / control.sends
                                         if control.sends else 0.0)
    return Comparison(variant=variant.name, control=control.name, difference=difference,
                      difference_low=low, difference_high=high, statistic=test.statistic,
                      p_value=test.p_value, p_adjusted=p_adjusted,
                      significant=p_adjusted < alpha, guardrail_difference=guard_difference,
                      guardrail_p_value=guard_p,
                      smallest_expected=stats.smallest_expected(
                          variant.successes, variant.sends, control.successes, control.sends),
                      guardrail_worse=(guard_difference is not None and guard_p is not None
                                       and guard_difference > 0 and guard_p < alpha))


def decide(arms: Sequence[Arm], *, control: str, confidence: float = 0.95,
           min_per_variant: int = 0, metric: str = "reply", guardrail: str | None = None,
           fallback: str | None = None, at: datetime | None = None) -> Decision:
    """The decision of a test over ``arms`` (see the module's docstring for the rule).

    ``guardrail`` names the guardrail metric (``opt_out``) and turns its veto on, from
    each arm's ``guardrail_events``; ``fallback`` is the variant that goes when there is no
    clear winner (the control by default); ``at`` is stored as the decision's time.
    """
    _check(arms, control, fallback, min_per_variant)
    alpha = stats.alpha_of(confidence)
    by_name = {arm.name: arm for arm in arms}
    base = by_name[control]
    variants = [arm for arm in arms if arm.name != control]
    tests = [stats.two_proportion_test(arm.successes, arm.sends, base.successes, base.sends)
             for arm in variants]
    adjusted = stats.holm([test.p_value for test in tests])
    comparisons = [_compare(arm, base, confidence, test, p, guardrail is not None)
                   for arm, test, p in zip(variants, tests, adjusted, strict=True)]
    results = [_result(arm, control, confidence) for arm in arms]
    rates = {result.name: result for result in results}
    words = _Words(metric, guardrail, rates, control, fallback, alpha, len(comparisons))

    short = [arm for arm in arms if arm.sends < min_per_variant]
    better = [c for c in comparisons if c.significant and c.difference > 0]
    eligible = sorted((c for c in better if not c.guardrail_worse),
                      key=lambda c: -rates[c.variant].rate)
    if short:
        outcome, winner, reason = DecisionOutcome.NOT_ENOUGH_SENDS, None, words.short(
            short, min_per_variant)
    elif eligible:
        outcome, winner = DecisionOutcome.WINNER, eligible[0].variant
        reason = words.variant_wins(eligible, [c for c in better if c.guardrail_worse])
    elif all(c.significant and c.difference < 0 for c in comparisons):
        outcome, winner, reason = DecisionOutcome.WINNER, control, words.control_wins(comparisons)
    else:
        outcome, winner = DecisionOutcome.NO_CLEAR_WINNER, None
        reason = words.no_clear_winner(comparisons, better)
    return Decision(outcome=outcome, winner=winner,
                    goes=winner if winner is not None else fallback or control,
                    reason=reason, metric=metric, guardrail=guardrail, control=control,
                    confidence=confidence, min_per_variant=min_per_variant, arms=results,
                    comparisons=comparisons, decided_at=at,
                    cautions=words.cautions(comparisons))


def _listed(items: Sequence[str]) -> str:
    """``["B", "C", "D"]`` → ``B, C and D``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


class _Words:
    """The sentences of a decision."""

    def __init__(self, metric: str, guardrail: str | None, rates: dict[str, ArmResult],
                 control: str, fallback: str | None, alpha: float, tests: int) -> None:
        self.rate = rate_name(metric)
        self.guard = rate_name(guardrail) if guardrail else ""
        self.rates = rates
        self.control = control
        self.fallback = fallback
        self.alpha = alpha
        self.holm = " after Holm" if tests > 1 else ""

    def _goes(self) -> str:
        """Who goes when nobody won."""
        if self.fallback is not None and self.fallback != self.control:
            return f"{self.fallback} (the stated fallback) goes to the rest"
        return f"{self.control} (the control) goes to the rest"

    def _p(self, p: float) -> str:
        return format_p(p, self.alpha)

    def variant_wins(self, eligible: list[Comparison], vetoed: list[Comparison]) -> str:
        """``B wins: its reply rate 14.2% vs A's 11.4% (+2.8 points, 95% CI …), p = …``,
        naming the variants that beat the control too but failed the guardrail."""
        best = eligible[0]
        confidence = f"{(1.0 - self.alpha) * 100:g}%"
        text = (f"{best.variant} wins: its {self.rate} {percent(self.rates[best.variant].rate)}"
                f" vs {self.control}'s {percent(self.rates[self.control].rate)} "
                f"({points(best.difference)} points, {confidence} CI "
                f"{points(best.difference_low)} to {points(best.difference_high)}), "
                f"p {self._p(best.p_adjusted)} < {self.alpha:g}{self.holm}")
        others = [c.variant for c in eligible[1:]]
        if others:
            text += (f"; {', '.join(others)} also beat {self.control}, with a lower rate "
                     f"(not tested against {best.variant})")
        if vetoed:
            names = _listed([c.variant for c in vetoed])
            text += (f"; {names} beat {self.control} too but "
                     f"{'its' if len(vetoed) == 1 else 'their'} {self.guard} "
                     f"{'is' if len(vetoed) == 1 else 'are'} significantly higher")
        return text

    def control_wins(self, comparisons: list[Comparison]) -> str:
        """``A (the control) wins: B's reply rate 9.0% is lower (p = …)``."""
        lower = "; ".join(f"{c.variant}'s {percent(self.rates[c.variant].rate)} is lower "
                          f"(p {self._p(c.p_adjusted)})" for c in comparisons)
        return (f"{self.control} (the control) wins with a {self.rate} of "
                f"{percent(self.rates[self.control].rate)}: {lower}{self.holm}")

    def no_clear_winner(self, comparisons: list[Comparison],
                        better: list[Comparison]) -> str:
        """``no clear winner: B's reply rate 12.1% vs A's 11.4%, p = 0.31 ≥ 0.05``, or the
        guardrail that stopped a variant which beat the control."""
        control_rate = percent(self.rates[self.control].rate)
        if better:  # every variant that beat the control failed the guardrail
            best = max(better, key=lambda c: self.rates[c.variant].rate)
            arm = self.rates[best.variant]
            return (f"no clear winner: {best.variant}'s {self.rate} {percent(arm.rate)} beat "
                    f"{self.control}'s {control_rate} (p {self._p(best.p_adjusted)}) but its "
                    f"{self.guard} {percent(arm.guardrail_rate)} is significantly higher than "
                    f"{self.control}'s {percent(self.rates[self.control].guardrail_rate)} "
                    f"(p {self._p(best.guardrail_p_value or 0.0)}); {self._goes()}")
        unclear = [c for c in comparisons if not c.significant]
        closest = min(unclear, key=lambda c: (c.p_adjusted, -self.rates[c.variant].rate))
        lower = [c.variant for c in comparisons if c.significant]
        verb = "is" if len(lower) == 1 else "are"
        also = f"; {_listed(lower)} {verb} significantly lower" if lower else ""
        return (f"no clear winner: {closest.variant}'s {self.rate} "
                f"{percent(self.rates[closest.variant].rate)} vs {self.control}'s "
                f"{control_rate}, p {self._p(closest.p_adjusted)} ≥ "
                f"{self.alpha:g}{self.holm}{also}; {self._goes()}")

    def cautions(self, comparisons: list[Comparison]) -> list[str]:
        """``B vs A: only 4.0 expected in the smallest cell …`` for each comparison whose
        table is too small for the chi-squared approximation (Cochran's rule: 5)."""
        return [f"{c.variant} vs {c.control}: only {c.smallest_expected:.1f} expected in the "
                "smallest cell of the 2×2 table (under 5): the p-value is approximate"
                for c in comparisons if c.smallest_expected < 5]

    def short(self, short: list[Arm], minimum: int) -> str:
        """``not enough sends: B had 180, A 200, under the 500 per variant …``."""
        had = _listed([f"{arm.name} {'had ' if i == 0 else ''}{arm.sends}"
                       for i, arm in enumerate(short)])
        return (f"not enough sends: {had}, under the {minimum} per variant the test needs; "
                f"{self._goes()}")
