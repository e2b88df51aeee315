"""What a dispatch reports: how it ended, and the timeline a person would want to see."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class TimelineEntry:
    """Something a user would want to see on the run's timeline."""

    at: datetime
    what: str


@dataclass
class RunResult:
    """How a dispatch ended."""

    run_id: int
    status: str
    counts: dict[str, int]
    reason: str | None = None
    timeline: list[TimelineEntry] = field(default_factory=list)
