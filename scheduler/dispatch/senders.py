"""The senders of a run: who may send next, and how each one reacts to trouble.

Each sender has its own :class:`~scheduler.dispatch.pacing.SenderPace` (rate, jitter, daily
cap) plus what the run learned: a plan quota from the service, a slow-down factor after a
429 that recovers gradually, and a cool-off when it is disconnected or keeps failing, during
which its work goes to the other senders.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo

from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.pacing import SenderPace
from scheduler.dispatch.shared_senders import SharedSenders
from scheduler.settings.engine import SENDER_COOLOFF_S, SENDER_FAILURE_THRESHOLD

#: A 429 doubles a sender's interval, up to this factor.
MAX_SLOWDOWN = 16.0
#: Each accepted send brings the slow-down factor this much closer to 1.
RECOVERY = 0.9


@dataclass
class SenderState:
    """One sender's pace and health during a run."""

    name: str
    pace: SenderPace
    base_rate: float
    slowdown: float = 1.0
    blocked_until: datetime | None = None
    down_reason: str | None = None
    failures: int = 0
    claimed: int = 0
    accepted: int = 0
    quota_left: float = math.inf
    quota_resets_at: datetime | None = None
    #: A WhatsApp call under way on this session: no other call before its end (or this).
    call_until: datetime | None = None
    last_scheduled: datetime | None = field(default=None, repr=False)
    #: The other runs' claims through this sender already taken in (SharedSenders).
    foreign_seen: int = field(default=0, repr=False)
    #: Why its profile keeps it from sending (paused, retired, disconnected, logged out):
    #: no rows until its profile says it may send again (see dispatch/dispatcher/care.py).
    held_reason: str | None = None
    #: Its health's factor on its rate (1.0: full speed; see scheduler.dispatch.health).
    care: float = 1.0

    def set_rate(self) -> None:
        """Its rate from its base rate, its 429 slow-down and its health factor."""
        self.pace.rate = self.base_rate * self.care / self.slowdown

    def ready_at(self, now: datetime) -> datetime:
        """The earliest instant this sender may send."""
        at = self.pace.next_allowed(now)
        if self.blocked_until is not None and self.blocked_until > at:
            at = self.blocked_until
        if self.quota_left <= 0 and self.quota_resets_at is not None:
            at = max(at, self.quota_resets_at)
        if self.call_until is not None and self.call_until > at:
            at = self.call_until
        return at


class SenderPool:
    """Rotation across the senders of a run (round-robin or least-used)."""

    def __init__(
        self, names: list[str], *, rate: float, rng: random.Random,
        jitter: tuple[float, float] = (0.0, 0.0), daily_cap: int | None = None,
        tz: tzinfo, rotation: str = "round-robin", cooloff_s: float = SENDER_COOLOFF_S,
        failure_threshold: int = SENDER_FAILURE_THRESHOLD,
        sent_today: dict[str, int] | None = None,
        now: datetime,
    ) -> None:
        self.rotation = rotation
        self.cooloff = timedelta(seconds=cooloff_s)
        self.failure_threshold = failure_threshold
        #: When the pool was made: the start of what this run knows of its senders.
        self.started_at = now
        self.senders: dict[str, SenderState] = {}
        for name in names:
            pace = SenderPace(rate, rng=rng, jitter=jitter, daily_cap=daily_cap, tz=tz)
            already = (sent_today or {}).get(name, 0)
            if already:
                pace.daily.record(now, already)
            self.senders[name] = SenderState(name, pace, rate)
        #: The senders this process may send through (its leases, as a ``campaign serve``
        #: worker on PostgreSQL); None: every sender of the run (a single process).
        self.held: frozenset[str] | None = None
        #: One call at a time per sender (``calls`` runs): how long a claimed call holds its
        #: sender at most (its end, seen in the ledger, frees it earlier).
        self.call_hold: timedelta | None = None
        self._order = list(self.senders)
        self._position = {name: i for i, name in enumerate(self._order)}
        self._cursor = 0
        self._shared: SharedSenders | None = None
        self._run_id = 0

    def share(self, shared: SharedSenders, run_id: int) -> None:
        """Pace the senders together with the process's other runs (see
        :mod:`scheduler.dispatch.shared_senders`); their claims so far are already in the
        ledger's count of today's sends this pool started from."""
        self._shared, self._run_id = shared, run_id
        for state in self.senders.values():
            latest, state.foreign_seen = shared.others(run_id, state.name)
            if latest is not None:  # its pace goes on from the other run's latest send
                state.pace.record_send(latest, count_day=False)
                state.last_scheduled = latest

    def _take_in(self, state: SenderState, now: datetime) -> None:
        """The other runs' claims through ``state`` since the last look: the latest spends
        a token and starts a jitter pause; all count toward the day and the plan quota."""
        shared = self._shared
        if shared is None or not shared.shared:
            return
        latest, total = shared.others(self._run_id, state.name)
        fresh = total - state.foreign_seen
        if fresh <= 0:
            return
        state.foreign_seen = total
        state.quota_left -= fresh
        if latest is not None and (state.last_scheduled is None
                                   or latest > state.last_scheduled):
            state.pace.record_send(latest)  # counts one in the day
            state.last_scheduled = latest
            fresh -= 1
        if fresh > 0:
            state.pace.daily.record(latest or now, fresh)

    def recount_today(self, sent_today: dict[str, int], now: datetime, *,
                      plan_limit: int | None = None) -> None:
        """Take today's sends of ``sent_today``'s senders from the ledger: a sender that
        another worker sent through since this pool was made (it held the lease then) has
        that much less of its daily cap and of the campaign's plan limit left."""
        for name, n in sent_today.items():
            state = self.senders.get(name)
            if state is None:
                continue
            state.pace.daily.set_count(now, n)
            if plan_limit is not None:
                state.quota_left = min(state.quota_left, plan_limit - n)

    def resume(self, name: str, sends: Sequence[datetime]) -> None:
        """``name`` paces on from ``sends`` made through it elsewhere (its previous holder's
        latest, from the ledger): see :meth:`~scheduler.dispatch.pacing.SenderPace.
        resume_from`."""
        state = self.senders.get(name)
        if state is None or not sends:
            return
        state.pace.resume_from(sends)
        latest = max(sends)
        if state.last_scheduled is None or latest > state.last_scheduled:
            state.last_scheduled = latest

    def set_quota(self, name: str, left: float, resets_at: datetime | None) -> None:
        """Apply the service's plan limit for a sender."""
        state = self.senders[name]
        state.quota_left, state.quota_resets_at = left, resets_at

    def pick(self, now: datetime, sticky: str | None = None) -> tuple[SenderState | None,
                                                                      datetime | None]:
        """A sender that may send at ``now``, else (None, the earliest time one may).

        ``sticky`` (a later step of a recipient) prefers the sender of the earlier steps,
        unless that sender is down, then any other.
        """
        if sticky is not None and sticky in self.senders and (
                self.held is None or sticky in self.held):
            state = self.senders[sticky]
            if state.held_reason is None and (state.down_reason is None
                                              or len(self.senders) == 1):
                self._take_in(state, now)
                ready = state.ready_at(now)
                return (state, ready) if ready <= now else (None, ready)
        candidates = self._candidates()
        earliest: datetime | None = None
        for state in candidates:
            self._take_in(state, now)
            ready = state.ready_at(now)
            if ready <= now:
                self._advance(state)
                return state, ready
            earliest = ready if earliest is None or ready < earliest else earliest
        return None, earliest

    def _candidates(self) -> Iterator[SenderState]:
        """Senders in the order they are tried; lazy, since the first usually may send
        (building the whole list of 100 senders per delivery showed in figure P2)."""
        held = self.held
        if self.rotation == "least-used":
            yield from sorted((s for s in self.senders.values()
                               if (held is None or s.name in held) and s.held_reason is None),
                              key=lambda s: (s.claimed, s.name))
            return
        order, senders, n = self._order, self.senders, len(self._order)
        for i in range(n):
            name = order[(self._cursor + i) % n]
            if (held is None or name in held) and senders[name].held_reason is None:
                yield senders[name]

    def _advance(self, state: SenderState) -> None:
        if self.rotation != "least-used":
            self._cursor = (self._position[state.name] + 1) % len(self._order)

    def on_claim(self, state: SenderState, ready: datetime, now: datetime) -> None:
        """A send is about to go out on ``state``: spend a token.

        The send is counted at its *scheduled* instant when we are only slightly late, so
        event-loop lateness does not accumulate into a slower rate. Once a sender is overdue,
        ``ready`` is ``now`` itself (the bucket is full), so the scheduled instant is asked of
        the state as it was at the previous send: ``ready_at(last_scheduled)``.
        """
        interval = 1.0 / state.pace.rate
        due = ready
        if state.last_scheduled is not None:
            scheduled = state.ready_at(state.last_scheduled)
            if scheduled < due:
                due = scheduled
        at = due if (now - due).total_seconds() < interval else now
        state.last_scheduled = at
        state.pace.record_send(at)
        if self._shared is not None:
            self._shared.note(self._run_id, state.name, at)
        state.claimed += 1
        state.quota_left -= 1
        if self.call_hold is not None:
            state.call_until = now + self.call_hold

    def follow_calls(self, under_way: dict[str, datetime]) -> None:
        """The calls under way per sender (when each was claimed), from the ledger: a sender
        whose call ended is free; one with a call holds until its end or time-out."""
        if self.call_hold is None:
            return
        for name, state in self.senders.items():
            claimed = under_way.get(name)
            state.call_until = None if claimed is None else claimed + self.call_hold

    def holding_calls(self) -> bool:
        """Whether some sender waits for its call to end."""
        return any(s.call_until is not None for s in self.senders.values())

    def on_accepted(self, state: SenderState) -> None:
        """The service took a message: the sender is healthy, slow-down recovers."""
        state.accepted += 1
        state.failures = 0
        state.down_reason = None
        if state.slowdown > 1.0:
            state.slowdown = max(1.0, state.slowdown * RECOVERY)
            state.set_rate()

    def on_throttled(self, state: SenderState, now: datetime, retry_after: float | None) -> None:
        """429: slow the sender down and honour ``Retry-After``."""
        state.slowdown = min(MAX_SLOWDOWN, state.slowdown * 2)
        state.set_rate()
        if retry_after:
            until = now + timedelta(seconds=retry_after)
            if state.blocked_until is None or until > state.blocked_until:
                state.blocked_until = until

    def on_failure(self, state: SenderState, now: datetime, why: str) -> bool:
        """A retryable failure; after ``failure_threshold`` in a row the sender cools off.

        Returns True when the sender was just paused.
        """
        state.failures += 1
        if state.failures >= self.failure_threshold:
            self.on_down(state, now, f"kept failing ({why})")
            return True
        return False

    def on_down(self, state: SenderState, now: datetime, why: str) -> None:
        """The sender is disconnected or failing: pause it; its work goes to the others."""
        state.failures = 0
        state.down_reason = why
        state.blocked_until = now + self.cooloff

    def on_up(self, state: SenderState) -> None:
        """The sender can send again (its session reconnected): back in rotation now."""
        state.failures = 0
        state.down_reason = None
        state.blocked_until = None


def pool_for_run(options: DispatchOptions, rng: random.Random, zone: tzinfo,
                 sent_today: dict[str, int], day_start: datetime,
                 quotas: dict[str, tuple[float, datetime | None]], now: datetime) -> SenderPool:
    """The pool of a run's senders: its pace, today's sends, the plan's and the service's
    quotas."""
    pool = SenderPool(
        list(options.senders), rate=options.rate, rng=rng, jitter=options.jitter,
        daily_cap=options.daily_cap, tz=zone, rotation=options.rotation,
        cooloff_s=options.engine.sender_cooloff_s,
        failure_threshold=options.engine.sender_failure_threshold,
        sent_today=sent_today, now=now,
    )
    if options.plan_limit is not None:
        for name in options.senders:
            left = options.plan_limit - sent_today.get(name, 0)
            pool.set_quota(name, left, day_start + timedelta(days=1))
    for name, (remaining, resets_at) in quotas.items():
        if name in pool.senders:
            pool.set_quota(name, remaining, resets_at)
    return pool
