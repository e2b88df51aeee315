"""What a run's dispatch is given besides its store, the service and its options.

:class:`Timing` says how the engine reads the time and waits: the real clock waits at most
:data:`CONTROL_EVERY_S` at a time, so pause and cancel are obeyed in time; a simulated clock
(a rehearsal, a test) waits in long strides, since waiting costs it nothing. The choice is
stated by the caller, never guessed from which function was injected.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from scheduler.core.timeutil import Clock, utcnow
from scheduler.dispatch.leases import Seat
from scheduler.dispatch.results import TimelineEntry
from scheduler.dispatch.shared_senders import SharedSenders
from scheduler.settings.senders import SenderCare

#: How often (real seconds) the owner checks for pause/cancel and writes its heartbeat.
CONTROL_EVERY_S = 0.5
#: The longest single wait under a simulated clock (simulated seconds).
SIMULATED_STRIDE_S = 3600.0
#: A rehearsal's real wait for awaited outcomes (see ``Timing.settle_real_s``).
SETTLE_REAL_S = 0.02


@dataclass(frozen=True)
class Timing:
    """The clock the engine reads, how it sleeps, and its longest single wait."""

    clock: Clock = utcnow
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    stride_s: float = CONTROL_EVERY_S
    #: A simulated clock: real seconds given to events (the sandbox's calls and reports)
    #: before simulated time moves past an outcome still awaited; 0 on a real clock.
    settle_real_s: float = 0.0

    @classmethod
    def simulated_by(cls, clock: Clock, sleep: Callable[[float], Awaitable[None]]) -> Timing:
        """A simulated clock (``scheduler.core.timeutil.SimulatedClock``): long strides."""
        return cls(clock, sleep, SIMULATED_STRIDE_S, SETTLE_REAL_S)


@dataclass
class RunSetup:
    """The surroundings of one run's dispatch (all optional: a plain foreground run)."""

    timing: Timing = field(default_factory=Timing)
    rng: random.Random = field(default_factory=random.Random)
    #: Whether webhook events reach this program (a receiver runs): sends in doubt are
    #: then verified against ``messages.sent`` for a grace period.
    events_received: bool = False
    #: Set by Ctrl-C or SIGTERM: the run pauses at the next turn.
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    #: Told each timeline entry as it happens (a progress bar, ``serve``'s log).
    on_note: Callable[[TimelineEntry], None] | None = None
    #: Told the run's counts by state after writes, at most every ``progress_every_s``.
    on_progress: Callable[[dict[str, int]], None] | None = None
    progress_every_s: float = 0.0
    #: The ``campaign serve`` worker this runs in (its leases choose the senders).
    seat: Seat | None = None
    #: The process's record of claims per sender, when it dispatches several runs at once.
    shared: SharedSenders | None = None
    #: How the senders are looked after (profiles, warm-up, health): ``config.toml``'s
    #: ``[senders]``; None: not at all (the senders are paced by the campaign alone).
    care: SenderCare | None = None


__all__ = ["CONTROL_EVERY_S", "RunSetup", "Timing"]
