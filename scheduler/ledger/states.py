"""Delivery, run and sender states, their order, and which transitions an event may make.

Tracking transitions only move forward (``accepted → sent → delivered → read``), so the
final state never depends on the order events arrive in.
"""

from __future__ import annotations

from enum import StrEnum


class DeliveryState(StrEnum):
    """State of one delivery (one step for one recipient in one run)."""

    PLANNED = "planned"
    DISPATCHING = "dispatching"
    ACCEPTED = "accepted"
    SENT = "sent"
    DELIVERED = "delivered"
    READ = "read"
    FAILED = "failed"
    SKIPPED = "skipped"
    EXPIRED = "expired"
    UNKNOWN = "unknown"
    # calls
    ANSWERED = "answered"
    NOT_ANSWERED = "not_answered"
    # SMS
    UNDELIVERED = "undelivered"
    # A/B tests: the rest of the audience waits for the test's winner (not due, not sent)
    HELD = "held"


class RunStatus(StrEnum):
    """Status of a run."""

    PLANNED = "planned"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    MISSED = "missed"


class SenderStatus(StrEnum):
    """Health state of a sender (a WhatsApp session, or ``account`` for SMS and voice),
    kept in ``sender_profiles`` across runs, campaigns and workers."""

    WARMING = "warming"
    HEALTHY = "healthy"
    THROTTLED = "throttled"
    PAUSED = "paused"
    DISCONNECTED = "disconnected"
    LOGGED_OUT = "logged_out"
    RETIRED = "retired"


#: The state shown for a sender named by a run that has no profile yet (not a
#: :class:`SenderStatus`: nothing is kept for it).
NO_PROFILE = "new"


#: Sender states that may send (a throttled sender at its reduced rate).
SENDING_STATES = frozenset({SenderStatus.WARMING, SenderStatus.HEALTHY, SenderStatus.THROTTLED})
#: Sender states that may not send until a person (or, for a disconnect, a reconnection)
#: brings them back.
HELD_STATES = frozenset({SenderStatus.PAUSED, SenderStatus.DISCONNECTED,
                         SenderStatus.LOGGED_OUT, SenderStatus.RETIRED})


class ChangeSource(StrEnum):
    """Who changed a sender's state: the health rules, a person, or a status event."""

    ENGINE = "engine"
    OPERATOR = "operator"
    EVENT = "event"


#: Forward order of the tracking states: an event may only raise a delivery's rank.
TRACKING_RANK: dict[str, int] = {
    DeliveryState.DISPATCHING: 0,
    DeliveryState.UNKNOWN: 0,
    DeliveryState.ACCEPTED: 1,
    DeliveryState.SENT: 2,
    DeliveryState.DELIVERED: 3,
    DeliveryState.UNDELIVERED: 3,
    DeliveryState.NOT_ANSWERED: 3,
    DeliveryState.ANSWERED: 4,
    DeliveryState.READ: 4,
}

#: States after which the dispatcher has nothing more to do for a delivery.
DONE_STATES = frozenset(
    {
        DeliveryState.ACCEPTED,
        DeliveryState.SENT,
        DeliveryState.DELIVERED,
        DeliveryState.READ,
        DeliveryState.FAILED,
        DeliveryState.SKIPPED,
        DeliveryState.EXPIRED,
        DeliveryState.UNKNOWN,
        DeliveryState.ANSWERED,
        DeliveryState.NOT_ANSWERED,
        DeliveryState.UNDELIVERED,
    }
)
#: States that count as "the service took it" (the one definition of "sent"; reports,
#: progress, re-runs and step release all use it).
SENT_STATES = frozenset(
    {
        DeliveryState.ACCEPTED,
        DeliveryState.SENT,
        DeliveryState.DELIVERED,
        DeliveryState.READ,
        DeliveryState.ANSWERED,
        DeliveryState.NOT_ANSWERED,
        DeliveryState.UNDELIVERED,
    }
)
#: States an event of the service proved: the message left (every state after ``accepted``).
CONFIRMED_SENT_STATES = SENT_STATES - {DeliveryState.ACCEPTED}
#: A recipient "received" a step when the service took it, or may have (``unknown``):
#: a re-run skips such numbers.
RECEIVED_STATES = SENT_STATES | {DeliveryState.UNKNOWN}
#: Run statuses in which no more work will happen.
FINISHED_RUN_STATUSES = frozenset(
    {RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED, RunStatus.MISSED}
)


#: ``runs.target`` of a run sent to the embedded sandbox; others are ``service:<host>``.
SANDBOX_TARGET = "sandbox"


def describe_target(value: str | None) -> str:
    """A stored ``runs.target`` in words, the same in ``status``, ``runs`` and reports."""
    if value == SANDBOX_TARGET:
        return "the embedded sandbox on this machine (no real messages)"
    if value and value.startswith("service:"):
        return value.removeprefix("service:")
    return "not recorded"
