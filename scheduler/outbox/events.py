"""The outgoing webhooks' events: their names and payloads (see docs/webhooks-outgoing.md).

Every body sent is ``{"type", "timestamp", "data"}`` (the Standard Webhooks convention;
``timestamp``: when the change happened, not when it was sent); ``data`` is one of the
models below. Payloads are minimal: a run's or a sender's events carry no phone number; a
recipient's event carries the number it is about (a CRM needs it to act on a reply or an
opt-out) and never the reply's text.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

#: Run events, by the status the run moved to (``running`` is started or resumed).
RUN_EVENTS = ("run.started", "run.paused", "run.resumed", "run.completed", "run.failed",
              "run.cancelled", "run.stuck")
#: Sender events, by the health state the sender moved to.
SENDER_EVENTS = ("sender.throttled", "sender.paused", "sender.logged_out", "sender.resumed")
RECIPIENT_EVENTS = ("recipient.replied", "recipient.opted_out")
EXPERIMENT_EVENTS = ("experiment.decided",)
#: Every event a subscription may name, in the catalogue's order.
EVENT_TYPES: tuple[str, ...] = (*RUN_EVENTS, *SENDER_EVENTS, *RECIPIENT_EVENTS,
                                *EXPERIMENT_EVENTS)

#: A run's new status → its event (``running`` is decided by whether it started before).
RUN_STATUS_EVENTS = {"paused": "run.paused", "completed": "run.completed",
                     "failed": "run.failed", "cancelled": "run.cancelled"}
#: A sender's new state → its event; ``healthy`` or ``warming`` after a held or throttled
#: state is ``sender.resumed``.
SENDER_STATE_EVENTS = {"throttled": "sender.throttled", "paused": "sender.paused",
                       "logged_out": "sender.logged_out"}
SENDER_RESUMED_FROM = frozenset({"throttled", "paused", "logged_out", "disconnected"})
SENDER_RESUMED_TO = frozenset({"healthy", "warming"})


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunData(_Data):
    """``run.*`` (but ``run.stuck``): a run's status changed."""

    run_id: int
    campaign: str
    channel: str
    status: str
    previous_status: str
    #: Why it stopped or paused, as ``campaign status`` says it (None: not said).
    reason: str | None = None
    at: datetime


class RunStuckData(_Data):
    """``run.stuck``: a running run has sent nothing for longer than its pace explains."""

    run_id: int
    campaign: str
    channel: str
    last_send_at: datetime | None = None
    idle_s: float
    allowed_s: float
    at: datetime


class SenderData(_Data):
    """``sender.*``: a sender's health state changed (the sender's name, never a number)."""

    sender: str
    state: str
    previous_state: str
    reason: str | None = None
    #: ``engine`` (the health rules), ``operator`` (a person) or ``event`` (the service).
    source: str
    at: datetime


class RecipientData(_Data):
    """``recipient.replied`` / ``recipient.opted_out``: a reply to a delivery was stored."""

    run_id: int
    campaign: str
    delivery_id: int
    #: The recipient's number, as the ledger holds it (E.164 digits).
    number: str
    #: What the reply was: ``text``, ``poll_update``, ``list_response``, … (no text).
    kind: str
    opted_out: bool
    received_at: datetime


class ExperimentData(_Data):
    """``experiment.decided``: a run's A/B test chose what the rest of its audience gets."""

    run_id: int
    campaign: str
    #: The variant that won (None: no significant winner; ``goes`` is the fallback).
    winner: str | None = None
    goes: str
    decided_at: datetime

