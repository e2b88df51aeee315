"""Errors of the reports; database, file-system and library errors are translated here.

Tree::

    SchedulerError                  (scheduler/core/errors.py)
    └── ReportError                 a report cannot be made
        ├── RunsNotFound            one or more run ids are not in the ledger
        ├── CampaignNotFound        no run of that campaign is in the ledger
        ├── NothingToReport         neither run ids nor a campaign were given
        ├── ReportFormatError       the format is neither ``xlsx`` nor ``csv``
        ├── ReportReadError         the ledger could not be read
        └── OutputNotWritable       the output folder or file cannot be written

Every message is one line meant for the person at the terminal. When a report fails, no
file (complete or partial) is left at the output path.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.core.errors import SchedulerError


class ReportError(SchedulerError):
    """A report cannot be made."""


class RunsNotFound(ReportError):
    """One or more run ids are not in the ledger."""

    def __init__(self, run_ids: Sequence[int]) -> None:
        self.run_ids = tuple(run_ids)
        listed = ", ".join(str(i) for i in self.run_ids)
        noun = "run" if len(self.run_ids) == 1 else "runs"
        super().__init__(f"{noun} {listed} not found in the ledger (see `campaign runs`)")


class CampaignNotFound(ReportError):
    """No run of that campaign is in the ledger."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"campaign {name!r} has no runs in the ledger")


class NothingToReport(ReportError):
    """Neither run ids nor a campaign were given."""


class ReportFormatError(ReportError):
    """The requested format is not one of ``xlsx`` and ``csv``."""


class ReportReadError(ReportError):
    """The ledger could not be read."""


class OutputNotWritable(ReportError):
    """The output folder or file cannot be written."""
