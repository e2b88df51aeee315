"""The state of one run's dispatch, shared by the dispatcher's roles, and its context.

:class:`RunContext` is what does not change while the run is dispatched (its stores, the
service, its options and channel, its setup); :class:`RunState` is everything that does:
rows read ahead, answers not yet settled (each a :class:`SendOutcome`), settlements not
yet written (each a :class:`Settlement`), sends in flight, the timeline and why the run
stops. The roles (``claims``, ``settling``, ``waiting``,
``control``) are small classes over these two, so each can be read on its own.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from scheduler.core.timeutil import Clock
from scheduler.core.units import load_zone
from scheduler.dispatch.channel import Channel, Quota, ServiceCalls
from scheduler.dispatch.dispatcher.setup import RunSetup
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import TimelineEntry
from scheduler.dispatch.senders import SenderPool, SenderState
from scheduler.dispatch.store import RunStores
from scheduler.ledger.changes import Changes
from scheduler.ledger.rows import DueDelivery
from scheduler.service.exceptions import ServiceError


@dataclass(slots=True)
class SendOutcome:
    """The answer to one send: a message id, or the error."""

    row: DueDelivery
    sender: SenderState
    message_id: str | None = None
    error: ServiceError | None = None
    details: dict[str, Any] | None = None


@dataclass
class Settlement(Changes):
    """Ledger changes of one batch (written by the store), plus what the run should note or
    do: ``stop_reason`` pauses it; ``fatal``: the stop is the account's (a wrong or revoked
    API key), and the run's caller is told with :class:`RunStopped`."""

    notes: list[TimelineEntry] = field(default_factory=list)
    stop_reason: str | None = None
    fatal: bool = False
    #: (sender, signal) of each 429 (``rate_limited``) and server error or time-out
    #: (``server_errors``): the health score's signals no row keeps.
    trouble: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RunContext:
    """What one run's dispatch works with (fixed for the run)."""

    stores: RunStores
    client: ServiceCalls
    options: DispatchOptions
    channel: Channel
    setup: RunSetup
    #: Each sender's remaining plan quota, as the service said at the start.
    quotas: dict[str, Quota]
    #: The campaign's time zone.
    zone: tzinfo = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "zone", load_zone(self.options.timezone))

    @property
    def run_id(self) -> int:
        """The run being dispatched."""
        return self.stores.run_id

    @property
    def clock(self) -> Clock:
        """The engine's clock (real or simulated)."""
        return self.setup.timing.clock


@dataclass
class RunState:
    """What changes while a run is dispatched (see the module)."""

    clock: Clock
    on_note: Callable[[TimelineEntry], None] | None = None
    timeline: list[TimelineEntry] = field(default_factory=list)
    #: The senders, their pace and health (made when the dispatch starts).
    pool: SenderPool | None = None
    #: Rows read ahead, in plan order, and the plan position read up to.
    buffer: deque[DueDelivery] = field(default_factory=deque)
    last_seq: int = -1
    #: Answers not yet settled, and the sends still in flight.
    outcomes: list[SendOutcome] = field(default_factory=list)
    inflight: set[asyncio.Task[None]] = field(default_factory=set)
    #: Set when ``want`` answers are waiting (one flush and claim serve many).
    batch_done: asyncio.Event = field(default_factory=asyncio.Event)
    want: int = 1
    #: Settled outcomes not yet written: they go out with the next claim, in the same
    #: transaction (one commit per loop turn), or on their own before any wait.
    pending: list[tuple[Settlement, datetime]] = field(default_factory=list)
    #: The earliest end of grace of a row being verified (None: no such row), so the
    #: ledger is asked only when one may be due.
    verify_at: datetime | None = None
    #: Rows held back for their recipient's own window, by when it opens, and whether
    #: the timeline says the run waits for them (see ``scheduler.dispatch.waits``).
    deferred: Counter[datetime] = field(default_factory=Counter)
    waiting_noted: bool = False
    #: Why the run stops (None: it goes on); ``fatal``: the account refused the key.
    stop_status: str | None = None
    stop_reason: str | None = None
    fatal: bool = False

    def note(self, at: datetime, what: str, **facts: Any) -> None:
        """Add a timeline entry (and tell ``on_note``)."""
        self.record(TimelineEntry(at, what, **facts))

    def record(self, entry: TimelineEntry) -> None:
        """Add a made timeline entry (and tell ``on_note``)."""
        self.timeline.append(entry)
        if self.on_note is not None:
            self.on_note(entry)

    def stop(self, status: str, reason: str, *, fatal: bool = False) -> None:
        """Stop the run at the next turn with ``status`` and ``reason`` (the first wins)."""
        if self.stop_status is None:
            self.stop_status, self.stop_reason, self.fatal = status, reason, fatal
            self.note(self.clock(), reason)

    def reread(self) -> None:
        """Forget the rows read ahead: read again from the start of the plan."""
        self.buffer.clear()
        self.last_seq = -1

    def verify_by(self, due: datetime) -> None:
        """A row is being verified until ``due``."""
        self.verify_at = due if self.verify_at is None else min(self.verify_at, due)


__all__ = ["RunContext", "RunState", "SendOutcome", "Settlement"]
