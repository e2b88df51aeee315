"""Top-level errors of the program, shared by every package.

Tree::

    SchedulerError                  anything the program reports to a user without a traceback
    ├── ConfigError                 settings file or environment is wrong
    ├── units.UnitError             a rate, duration, window, … is not readable (also a ValueError)
    ├── run_options.OptionsError    a run's stored options cannot be read
    ├── service.exceptions.ServiceError     (scheduler/service/exceptions.py)
    ├── campaign.exceptions.CampaignError   (scheduler/campaign/exceptions.py)
    ├── ledger.exceptions.LedgerError       (scheduler/ledger/exceptions.py)
    └── dispatch.exceptions.DispatchError   (scheduler/dispatch/exceptions.py)

Each package has its own exceptions module whose classes derive from ``SchedulerError``;
third-party errors (httpx, SQLAlchemy, pandas, Jinja2) are translated at the package boundary.
"""

from __future__ import annotations


class SchedulerError(Exception):
    """An error that the command line prints as one clear message (exit code 1)."""


class ConfigError(SchedulerError):
    """The settings file or the environment holds a wrong or missing value."""
