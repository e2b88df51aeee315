"""A/B tests of a campaign's variants: who gets which variant, and which one won (pure).

- :mod:`~scheduler.experiments.assignment`: a recipient's variant and test share, from
  SHA-256 (stable across processes, workers and resumes), each drawn on its own;
- :mod:`~scheduler.experiments.exact`: the test share counted over every recipient of a
  plan (exactly round(share × N), the variants split by weight within one), which the
  plan uses.
- :mod:`~scheduler.experiments.stats`: the test (Pearson chi-squared, 1 df, no continuity
  correction), Wilson and Newcombe intervals, Holm's correction.
- :mod:`~scheduler.experiments.decision`: :func:`decide` over the arms' counts, giving a
  :class:`Decision` with its numbers and its reason in plain words.
- :mod:`~scheduler.experiments.power`: what a test of a given size can detect, for the plan.

No database, no clock, no randomness: the callers bring the counts and the time.
"""

from __future__ import annotations

from .assignment import in_test_share, variant_of
from .decision import Arm, ArmResult, Comparison, Decision, DecisionOutcome, decide
from .exceptions import AssignmentError, DecisionError, ExperimentError
from .power import DetectableLift, detectable_lift, smallest_detectable_lift

__all__ = ["Arm", "ArmResult", "AssignmentError", "Comparison", "Decision", "DecisionError",
           "DecisionOutcome", "DetectableLift", "ExperimentError", "decide", "detectable_lift",
           "in_test_share", "smallest_detectable_lift", "variant_of"]
