"""Errors of the ledger. Database errors (SQLAlchemy's and the drivers') never reach
callers: :mod:`scheduler.ledger.access`, the only way into the database, turns them into
:class:`LedgerError` (one line naming what failed) at the end of each transaction or read.

Tree::

    SchedulerError                  (scheduler/core/errors.py)
    └── LedgerError                 the database could not do what was asked
        ├── DatabaseUnavailable     cannot open or migrate the database (path, URL, permissions)
        ├── RunNotFound             no run with that id
        ├── RunStateError           the run is not in a state that allows the action
        └── RunLocked               another live process holds the run
"""

from __future__ import annotations

from scheduler.core.errors import SchedulerError


class LedgerError(SchedulerError):
    """The database could not do what was asked."""


class DatabaseUnavailable(LedgerError):
    """The database cannot be opened, created or migrated."""


class RunNotFound(LedgerError):
    """No run has that id."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id} not found (see `campaign runs`)")


class RunStateError(LedgerError):
    """The run's status does not allow the requested action."""


class RunLocked(LedgerError):
    """Another live process is dispatching the run."""
