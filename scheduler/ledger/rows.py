"""What the ledger's queries answer: typed rows, never bare positional tuples.

Rows read on a hot path are built straight from the driver's tuples (a slotted dataclass
or a named tuple costs about what the tuple did); named tuples also unpack as before, so
``for event_id, payload in rows`` keeps working where order is the natural reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class DueDelivery:
    """What the dispatcher needs of a row it is about to send."""

    id: int
    seq: int
    step: int
    to: str
    path: str
    payload: str
    sender: str | None
    region: str | None
    attempts: int


class AmbiguousRow(NamedTuple):
    """A row left ``dispatching``: maybe sent. ``due_at`` set: its verification grace ends
    then (a time-out); None: a crash left it (settled at the next start)."""

    id: int
    to: str
    step: int
    sender: str | None
    dispatched_at: datetime | None
    due_at: datetime | None


class SentProof(NamedTuple):
    """A ``messages.sent`` event whose message id no delivery holds yet."""

    message_id_norm: str
    occurred_at: datetime | None


class StoredEvent(NamedTuple):
    """A stored webhook event: its id and raw JSON payload."""

    id: int
    payload: str


class UnmatchedEvent(NamedTuple):
    """A stored event that matched no delivery yet, by the message id it names."""

    id: int
    message_id_norm: str


class LatestDelivery(NamedTuple):
    """The delivery a reply answers, and its run."""

    delivery_id: int
    run_id: int


class UptimeInterval(NamedTuple):
    """When a webhook receiver listened: its URL key, start, last sign of life, and when it
    stopped of its own accord (``None``: still listening, or killed)."""

    url_key: str
    started_at: datetime
    last_seen_at: datetime
    stopped_at: datetime | None = None


class UnknownRow(NamedTuple):
    """A delivery left ``unknown`` and when it was dispatched."""

    id: int
    dispatched_at: datetime | None


@dataclass(frozen=True, slots=True)
class DueFire:
    """A recorded fire of a scheduled campaign that no run was made from yet."""

    id: int
    campaign_name: str
    definition_path: str
    fire_time: datetime


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """A campaign registered with ``campaign schedule``; ``trigger`` is ``cron:…``/``at:…``."""

    name: str
    definition_path: str
    trigger: str
    timezone: str


class SessionStatusRow(NamedTuple):
    """A session's latest stored ``connection.status``: the status, why, and when (``at``:
    the event's own time, else its arrival)."""

    session_id: str
    status: str
    reason: str | None
    at: datetime
    received_at: datetime
    event_id: int


@dataclass(frozen=True, slots=True)
class Funnel:
    """How far a run's deliveries got; each count includes the next (a read message was
    also delivered and sent); ``opted_out`` counts numbers."""

    sent: int
    delivered: int
    read: int
    replied: int
    opted_out: int

    def as_dict(self) -> dict[str, int]:
        """``{sent, delivered, read, replied, opted_out}``."""
        return {"sent": self.sent, "delivered": self.delivered, "read": self.read,
                "replied": self.replied, "opted_out": self.opted_out}


class WorkerRow(NamedTuple):
    """A ``campaign serve`` worker as registered: live while its heartbeat is fresh."""

    id: str
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None
    wants: int
    #: Where it sends (``runs.target``'s form); None when registered before it was recorded.
    target: str | None = None


class LeaseRow(NamedTuple):
    """Who holds a sender until when; ``last_sent_at`` is the sender's latest claim."""

    sender: str
    worker: str | None
    expires_at: datetime
    epoch: int
    last_sent_at: datetime | None


class SenderProfileRow(NamedTuple):
    """A sender's profile (``sender_profiles``): its state with why and since when, its
    warm-up day (``warm_day_date``: the local date it was last advanced for), its latest
    health score and the factor applied to its rate (1.0: full speed)."""

    sender: str
    first_seen_at: datetime
    state: str
    reason: str | None
    since: datetime
    warm_profile: str | None
    warm_day: int
    warm_day_date: date | None
    score: float | None
    throttle: float


class SenderChangeRow(NamedTuple):
    """One change of a sender's state or reason, who made it and the score then."""

    id: int
    sender: str
    at: datetime
    from_state: str | None
    to_state: str
    reason: str | None
    source: str
    score: float | None


# ---------------------------------------------------------------- A/B tests (migration 0012)


@dataclass(frozen=True)
class ExperimentRow:
    """A run's test as stored (JSON columns read)."""

    run_id: int
    variants: list[tuple[str, float]]
    control: str
    settings: dict[str, Any]
    test_size: int
    rest_size: int
    test_sent_at: datetime | None
    decide_at: datetime | None
    decided_at: datetime | None
    winner: str | None
    goes: str | None
    decision: dict[str, Any] | None

    @property
    def wait_s(self) -> float:
        """Seconds between the test share's last send and the decision."""
        return float(self.settings.get("wait_s", 0.0))


@dataclass(frozen=True)
class ArmCount:
    """One variant's counts in the test share: sends, successes on the metric, guardrail
    events (opt-outs)."""

    sends: int
    successes: int
    guardrail_events: int


@dataclass(frozen=True)
class ExperimentProgress:
    """Where a run's undecided test stands: rows of the test share still to send, rows
    held for the winner, and when the test share's last send went out."""

    experiment: ExperimentRow
    pending: int
    held: int
    last_send: datetime | None


@dataclass(frozen=True)
class ExperimentVerdict:
    """What a decision stores: the winner (None: no clear winner), the variant that goes
    to the rest, and the decision with its numbers as JSON."""

    winner: str | None
    goes: str
    decision: str


@dataclass(frozen=True)
class ExperimentPlan:
    """What the plan stores of a run's test: its variants ``[(name, weight)]`` in order,
    the control, and its settings (``step``: the first varied step; ``metric``, …)."""

    variants: list[tuple[str, float]]
    control: str
    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WatchedRow:
    """A row whose outcome may make another attempt (``deliveries.watch`` set), settled
    past ``dispatching``, with what a verdict needs (see ``scheduler.dispatch.recycle``)."""

    id: int
    #: The id of the recipient's first attempt of this step (its own id for attempt 1).
    first_id: int
    run_id: int
    row: int
    step: int
    attempt: int
    to: str
    region: str | None
    kind: str
    state: str
    dispatched_at: datetime | None
    #: When the first attempt went out (``[fallback] after`` counts from it).
    first_dispatched_at: datetime | None
    delivered_at: datetime | None
    read_at: datetime | None
    ended_at: datetime | None
    #: ``deliveries.details`` read ({} when NULL): voice ``cause``, ``talkSeconds``,
    #: ``answered``; SMS ``errorCode``.
    details: dict[str, Any]
    #: ``deliveries.fallback`` read: ``{"kind", "path", "payload"}`` when the recipient can
    #: get the fallback step, ``{"none": why}`` when not (a landline, …); None: no fallback.
    fallback: dict[str, Any] | None
    #: Whether the number is on the suppression list now.
    suppressed: bool


@dataclass(frozen=True)
class Recycled:
    """What one recycle transaction did (:meth:`RecyclingStore.recycle`): rows planned again per
    rule (``{"no_answer": 12, "busy": 3}``), rows that fell back, verdicts that ended a
    recipient's attempts (and how many of those reached them), decisions another worker had
    taken already (nothing written), and the new rows: their ids and the earliest due."""

    retried: dict[str, int]
    fell_back: int
    final: int
    reached: int
    taken_already: int
    made_due: list[int]
    earliest_due: datetime | None


# ---- verdicts on watched rows: made by scheduler.dispatch.recycle.judge, written by the
# ledger's recycle transaction (plain data, so both sides hold the same types)

@dataclass(frozen=True, slots=True)
class Retry:
    """Plan attempt ``attempt`` of the same step, due at ``due_at``, made by rule ``rule``
    (the outcome it reacted to: ``no_answer``, ``busy``, …)."""

    rule: str
    attempt: int
    due_at: datetime
    why: str


@dataclass(frozen=True, slots=True)
class Fallback:
    """Plan the fallback step on ``channel`` as attempt ``attempt``, due now."""

    attempt: int
    channel: str
    why: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to decide before ``until`` (the outcome is not in, or ``after`` has not
    come)."""

    until: datetime
    why: str


@dataclass(frozen=True, slots=True)
class Final:
    """No more attempts: ``reached`` says whether the recipient was reached."""

    why: str
    reached: bool


#: A verdict on a watched row (the dispatcher's ``ExperimentVerdict``).
RecycleVerdict = Retry | Fallback | Wait | Final
