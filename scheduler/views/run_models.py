"""A run's view (:class:`RunView`, exported by :mod:`scheduler.views.run_view`) and its
parts: pydantic models that cross to the dashboard's templates and to ``campaign status
--json``.

Times are aware datetimes in UTC; ``RunInfo.timezone`` names the campaign's zone, in
which every page and line shows them (:func:`scheduler.core.time_words.local_time`).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from scheduler.core.lazy_model import LazyModel
from scheduler.ledger.attempt_funnel import AttemptsView


class RunInfo(LazyModel):
    """The run itself: what it sends, where, its status and its times."""

    id: int
    campaign: str
    channel: str
    status: str
    #: Why it stopped (failed, cancelled, paused by …), when it says.
    reason: str | None = None
    delivery: str = "at-most-once"
    #: ``runs.target``: ``sandbox`` or ``service:<host>``; and the same in words.
    target: str | None = None
    sent_to: str = ""
    #: The campaign's zone (IANA name): every time is shown in it, with its label.
    timezone: str = "UTC"
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    #: A pause or cancel asked by another process and not yet obeyed.
    control: str | None = None
    #: A live process holds it (a foreground run, or a worker's heartbeat), and which.
    owner: str | None = None


class Progress(LazyModel):
    """How much of the run is done: rows that need nothing more, of the rows to send."""

    #: Rows to send (every row but the skipped ones: the funnel's *planned*).
    total: int = 0
    #: Rows settled (sent or beyond, failed, unknown, undelivered …), of ``total``.
    done: int = 0
    #: Rows still to go (planned or being sent).
    remaining: int = 0
    percent: float = 0.0
    #: When the rest should be sent at the pace of the last minutes (None: no pace, or
    #: the run does not send now).
    eta: datetime | None = None


class StepFunnel(LazyModel):
    """One step's funnel (a campaign of several steps: a message, then a reminder …)."""

    step: int
    planned: int = 0
    sent: int = 0
    delivered: int = 0
    read: int = 0
    replied: int = 0
    failed: int = 0


class SmsFunnel(LazyModel):
    """An SMS run's own outcomes (read from counts, and the newest undelivered rows)."""

    delivered: int = 0
    undelivered: int = 0
    awaiting_report: int = 0
    #: Undelivered by report (``undelivered``, ``failed``, ``expired``) and by the
    #: service's error code, over the newest ``sampled`` undelivered rows.
    by_report: dict[str, int] = Field(default_factory=dict)
    by_error_code: dict[str, int] = Field(default_factory=dict)
    sampled: int = 0


class CallFunnel(LazyModel):
    """A voice or WhatsApp calls run: answered or not, and calls still in progress."""

    answered: int = 0
    not_answered: int = 0
    #: Placed, with no outcome yet.
    no_outcome_yet: int = 0
    #: Placed and not ended yet (``ended_at`` unset).
    in_progress: int = 0


class FunnelView(LazyModel):
    """The run's funnel as :mod:`scheduler.ledger.funnel` defines it (the report's)."""

    channel: str
    #: planned, sent, delivered, read, replied, answered, undelivered, skipped, opted_out …
    counts: dict[str, int] = Field(default_factory=dict)
    #: rate label → share (None when its base is 0).
    rates: dict[str, float | None] = Field(default_factory=dict)
    line: str = ""
    steps: list[StepFunnel] = Field(default_factory=list)
    sms: SmsFunnel | None = None
    calls: CallFunnel | None = None


class SenderPace(LazyModel):
    """One sender's sends of this run in the last minutes."""

    sender: str
    #: Sends of this run through it in the last ``window_s`` seconds.
    recent: int = 0
    window_s: float = 300.0
    per_minute: float = 0.0
    last_send_at: datetime | None = None


class Wait(LazyModel):
    """One reason the run does not send now, and until when (None: until someone acts)."""

    #: ``window`` (the sending window is closed), ``cap`` (daily cap or plan limit),
    #: ``in_doubt`` (sends being verified), ``sender_held`` (paused, disconnected, logged
    #: out, throttled to nothing), ``unserved`` (no process sends it), ``paused``,
    #: ``not_started``, ``scheduled`` (its first rows are due later), ``second_chances``
    #: (sends await their outcome before a retry or the fallback is decided; a fallback
    #: run waits for its parent).
    kind: str
    text: str
    until: datetime | None = None
    sender: str | None = None
    #: What a person can do about it (a command), when something can be done.
    advice: str | None = None


class ErrorGroup(LazyModel):
    """Failed rows with the same error."""

    state: str
    message: str
    n: int
    last_at: datetime | None = None


class RecentEvent(LazyModel):
    """One of the run's newest webhook events or replies."""

    id: int
    event: str
    at: datetime | None = None
    number: str | None = None
    #: A short summary (a reply's text, a status, an error code); shown escaped.
    text: str | None = None
    #: The recipient's name from the delivery's CSV values (the first column named as in
    #: ``facts.NAME_COLUMNS``); None: no such column, or no delivery matched. Escaped.
    recipient: str | None = None


class WorkerPace(LazyModel):
    """What one worker sent of this run (PostgreSQL ``campaign serve`` workers)."""

    worker: str
    sent: int = 0
    #: Its sends of this run in the last minutes, per second (None: none lately).
    per_s: float | None = None
    live: bool = False


class Stuck(LazyModel):
    """Whether the run looks stuck: no send for longer than its pace explains, and no
    wait explains it."""

    stuck: bool = False
    #: Why it is (or is not) flagged, in words.
    reason: str = ""
    #: How long since the last send, and how long its pace allows.
    idle_s: float | None = None
    allowed_s: float | None = None


class SenderGlance(LazyModel):
    """A sender at a glance: its state, score and why (``sender_profiles``)."""

    sender: str
    #: A ``SenderStatus`` value, or ``new`` (no profile yet).
    state: str
    reason: str | None = None
    since: datetime | None = None
    score: float | None = None
    throttle: float | None = None
    held: bool = False
    what_to_do: str | None = None
    #: Rows dispatched through it today (the campaign's zone, every run); None: not
    #: counted (a run's view does not count them; the overview when the day's sends are
    #: too many to count in time, see ``reading.SENDER_DAY_COUNTED``).
    sends_today: int | None = 0
    warm_day: int | None = None
    warm_cap: int | None = None


class RunView(LazyModel):
    """Everything a run's page shows, as of ``read_at`` (one consistent snapshot)."""

    run: RunInfo
    #: Deliveries by state (every state the run has rows in).
    counts: dict[str, int] = Field(default_factory=dict)
    funnel: FunnelView
    progress: Progress = Field(default_factory=Progress)
    #: Sends per sender in the last minutes.
    pace: list[SenderPace] = Field(default_factory=list)
    #: Why the run does not send now (empty: it sends, or it is finished).
    waits: list[Wait] = Field(default_factory=list)
    #: Failed rows grouped by error, most first.
    errors: list[ErrorGroup] = Field(default_factory=list)
    #: The run's newest events and replies, newest first (at most 20).
    events: list[RecentEvent] = Field(default_factory=list)
    workers: list[WorkerPace] = Field(default_factory=list)
    stuck: Stuck = Field(default_factory=Stuck)
    #: When the run's last send left (None: nothing sent yet).
    last_send_at: datetime | None = None
    senders: list[SenderGlance] = Field(default_factory=list)
    #: Skipped rows by the kind of their reason (blank_value, duplicate, invalid_number …).
    skipped_by_reason: dict[str, int] = Field(default_factory=dict)
    #: 0: ``skipped_by_reason`` counts every skipped row; else only this many, the newest
    #: (a run's view reads at most that many: ``campaign status`` counts them all).
    skipped_sampled: int = 0
    #: ``unknown`` rows: waiting for proof, unproven (safe to send again), unknowable.
    unknown_detail: dict[str, int] = Field(default_factory=dict)
    #: False: the run has more ``unknown`` rows than a view judges (judging reads each
    #: one), so ``unknown_detail`` is empty; ``campaign status`` judges them all.
    unknown_judged: bool = True
    #: Second chances (retry rules, a fallback channel): the funnel per attempt; None for
    #: a run without them.
    attempts: AttemptsView | None = None
    read_at: datetime
    #: A short token that changes when anything shown changes (live updates send a new
    #: fragment only then); ``read_at`` is not part of it.
    version: str = ""
