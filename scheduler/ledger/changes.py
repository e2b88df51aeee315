"""What the dispatcher hands the store to write: a batch's changes, and rows in doubt.

Plain data, so the engine can decide (:mod:`scheduler.dispatch.dispatcher.settling`,
:mod:`scheduler.dispatch.reconcile`) and the ledger can write
(:class:`scheduler.ledger.queue_store.QueueStore`) without either knowing the other's insides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

from scheduler.ledger.rows import AmbiguousRow, SentProof


@dataclass
class Changes:
    """The ledger changes of one batch of answers (ids are ``deliveries.id``)."""

    #: (id, message id) of the sends the service took.
    accepted: list[tuple[int, str | None]] = field(default_factory=list)
    #: (id, details) to keep on the row (SMS segments and cost).
    details: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: (recipient, step, sender) whose next step is released.
    released: list[tuple[str, int, str | None]] = field(default_factory=list)
    #: (id, due again at, why) back to ``planned``.
    retries: list[tuple[int, datetime, str]] = field(default_factory=list)
    #: (id, code, why) ``failed``.
    failed: list[tuple[int, str, str | None]] = field(default_factory=list)
    #: (id, code, why) ``unknown``: maybe sent, never proven.
    unknown: list[tuple[int, str, str | None]] = field(default_factory=list)
    #: (id, grace ends at, why) waiting for events to prove them.
    verifying: list[tuple[int, datetime, str]] = field(default_factory=list)
    #: (recipient, step) whose later steps are skipped.
    stopped: list[tuple[str, int]] = field(default_factory=list)
    #: The delays between the run's steps (a released step is due after its delay).
    step_delays_s: tuple[float, ...] = (0.0,)


class ProofRule(NamedTuple):
    """Which events prove a send in doubt: their names, and whether they name the sending
    session (WhatsApp does; account channels, SMS and voice, do not)."""

    events: frozenset[str]
    names_session: bool
    #: Clock skew tolerated between the dispatcher and the receiver that stamps events.
    skew: timedelta = timedelta(seconds=5)


class InDoubt(NamedTuple):
    """A row that may or may not have been sent, and the proof found for it (or None)."""

    row: AmbiguousRow
    proof: SentProof | None


class Settle(NamedTuple):
    """What becomes of a row in doubt: ``sent`` (proven), ``verifying`` until ``until``,
    ``requeued`` (sent again), or ``unknown``; ``why`` is stored on the row."""

    row: AmbiguousRow
    kind: Literal["sent", "verifying", "requeued", "unknown"]
    why: str = ""
    until: datetime | None = None
    proof: SentProof | None = None


class AudienceCheck(NamedTuple):
    """A campaign's audience rules for one claim: at most ``max_per_day`` (since
    ``day_start``) and ``max_per_week`` messages per number over every campaign, and a hold
    after ``hold_unengaged_after`` messages never read or replied to; ``recipients``: the
    number of each claimed row."""

    max_per_day: int | None
    max_per_week: int | None
    hold_unengaged_after: int | None
    day_start: datetime
    recipients: dict[int, str]


__all__ = ["AudienceCheck", "Changes", "InDoubt", "ProofRule", "Settle"]
