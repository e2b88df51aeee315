"""What a dispatch reports: how it ended, and the timeline a person would want to see."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class TimelineEntry:
    """Something a user would want to see on the run's timeline.

    ``what`` is the sentence; ``kind`` says what it is about for a reader that shows state
    (the progress bar): ``window_closed`` (``until`` it opens) and ``window_open``;
    ``verifying`` (sends a crash left in doubt, checked against events ``until``);
    ``sender_down`` / ``sender_up`` (``sender``; ``why`` it is down); ``recipients_wait``
    (every delivery left waits for its recipient's own window, the first ``until``; or the
    latest send time, when that comes first) and ``recipients_resume``.
    """

    at: datetime
    what: str
    kind: str = ""
    sender: str | None = None
    until: datetime | None = None
    why: str | None = None


@dataclass
class RunResult:
    """How a dispatch ended."""

    run_id: int
    status: str
    counts: dict[str, int]
    reason: str | None = None
    timeline: list[TimelineEntry] = field(default_factory=list)
