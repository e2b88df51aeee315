"""Errors of the dispatcher.

Tree::

    SchedulerError                  (scheduler/core/errors.py)
    └── DispatchError               a run cannot go on
        └── RunStopped              the service refused the key (401/403): the run is paused
"""

from __future__ import annotations

from scheduler.core.errors import SchedulerError


class DispatchError(SchedulerError):
    """A run cannot go on."""


class RunStopped(DispatchError):
    """The service refused our key; the run was paused and says why."""
