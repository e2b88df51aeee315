"""Errors of the experiments (A/B variants): wrong weights, shares, arms or settings.

Tree::

    SchedulerError                  (scheduler/core/errors.py)
    └── ExperimentError             an experiment's input cannot be used
        ├── AssignmentError         the variants' weights or the test share are wrong
        └── DecisionError           the arms or the decision's settings are wrong

The package is pure arithmetic: nothing third-party is raised through it. Every message is
one line meant for the person at the terminal and names the variant or setting at fault.
"""

from __future__ import annotations

from scheduler.core.errors import SchedulerError


class ExperimentError(SchedulerError):
    """An experiment's input cannot be used."""


class AssignmentError(ExperimentError):
    """The variants' weights or the test share are wrong (none, negative, all zero, …)."""


class DecisionError(ExperimentError):
    """The arms or the decision's settings are wrong (an unknown control, a rate over 100%,
    a confidence outside (0, 1), …)."""
