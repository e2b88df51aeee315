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
    latest send time, when that comes first) and ``recipients_resume``; ``sender_capped``
    (``sender`` reached its daily cap or plan limit, ``cap`` says which and when it sends
    again, also in ``until``).
    """

    at: datetime
    what: str
    kind: str = ""
    sender: str | None = None
    until: datetime | None = None
    why: str | None = None
    cap: CapWait | None = None
    #: The sender's profile state, when sender care made the entry (``sender_down`` of a
    #: held sender: paused, retired, logged_out, disconnected).
    state: str | None = None


@dataclass(frozen=True)
class CapWait:
    """A sender that may not send until its daily cap or plan limit starts again.

    ``kind`` is ``daily_cap`` (the campaign's ``daily_cap``, per local day of its zone) or
    ``plan_limit`` (the campaign's ``plan_limit``, or the service's plan quota when
    ``limit`` is ``None``); ``reached_at`` the send that used the last of it (``None``:
    not known, another process used it); ``sends_again`` the first instant it may send
    after the reset (the window's opening when the reset falls outside it).
    """

    sender: str
    kind: str
    limit: int | None
    reached_at: datetime | None
    sends_again: datetime


@dataclass
class RunResult:
    """How a dispatch ended."""

    run_id: int
    status: str
    counts: dict[str, int]
    reason: str | None = None
    timeline: list[TimelineEntry] = field(default_factory=list)
