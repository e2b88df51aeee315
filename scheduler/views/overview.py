"""The dashboard's overview: the newest runs with their progress, today's sends, the
senders at a glance, read in ONE snapshot (:func:`read_overview`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from scheduler.views.parts import SenderGlance

__all__ = ["Overview", "RunSummary"]


class RunSummary(BaseModel):
    """One run in the overview's list (its counts from the tallies)."""

    id: int
    campaign: str
    channel: str
    status: str
    reason: str | None = None
    target: str | None = None
    timezone: str = "UTC"
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    total: int = 0
    done: int = 0
    percent: float = 0.0
    #: A few words on how it went (``campaign runs``'s line).
    summary: str = ""


class Overview(BaseModel):
    """The overview page, as of ``read_at``."""

    #: Every run of the ledger counted by status.
    by_status: dict[str, int] = Field(default_factory=dict)
    #: The newest runs (at most ``limit``), newest first.
    runs: list[RunSummary] = Field(default_factory=list)
    limit: int = 50
    #: Sends today (every run, every sender): since ``day_start``, midnight in ``timezone``.
    sends_today: int = 0
    day_start: datetime | None = None
    timezone: str = "UTC"
    senders: list[SenderGlance] = Field(default_factory=list)
    #: Live ``campaign serve`` workers (PostgreSQL).
    workers: int = 0
    read_at: datetime
    version: str = ""
