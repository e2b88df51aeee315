"""A sliding-window limit on login attempts, per key (a client address or a user name).

Pure: the clock is injected, nothing sleeps. Every attempt counts (right or wrong), since
each costs an Argon2 verification; a key past its limit is refused until its oldest attempt
in the window leaves it, and the refusal says how long that is (for ``Retry-After``).
The table is bounded: keys whose window is empty are forgotten, and past ``max_keys`` the
least recently used key goes, so made-up user names cannot grow it without end. One lock
makes it safe from the server's threads.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque
from contextlib import ExitStack
from datetime import datetime, timedelta

from scheduler.core.timeutil import Clock, utcnow


class RateLimiter:
    """At most ``limit`` attempts per key within any ``window``."""

    def __init__(self, limit: int = 5, window: timedelta = timedelta(minutes=1), *,
                 clock: Clock = utcnow, max_keys: int = 10_000) -> None:
        if limit < 1 or window <= timedelta(0):
            raise ValueError("a rate limit needs limit >= 1 and a positive window")
        self.limit, self.window, self.clock, self.max_keys = limit, window, clock, max_keys
        self._hits: OrderedDict[str, deque[datetime]] = OrderedDict()
        self._lock = threading.RLock()

    def retry_after(self, key: str) -> int:
        """Whole seconds until ``key`` may try again (0: it may now); records nothing."""
        with self._lock:
            return self._retry_after(key)

    def _retry_after(self, key: str) -> int:
        now = self.clock()
        hits = self._recent(key, now)
        if len(hits) < self.limit:
            return 0
        wait = (hits[0] + self.window - now).total_seconds()
        return max(1, math.ceil(wait))

    def hit(self, key: str) -> int:
        """Record an attempt by ``key`` if it is allowed; the seconds to wait if it is not
        (then nothing is recorded: waiting out the window is enough)."""
        with self._lock:
            return self._hit(key)

    def _hit(self, key: str) -> int:
        wait = self._retry_after(key)
        if wait:
            return wait
        self._hits.setdefault(key, deque()).append(self.clock())
        self._hits.move_to_end(key)
        while len(self._hits) > self.max_keys:
            self._hits.popitem(last=False)
        return 0

    def _recent(self, key: str, now: datetime) -> deque[datetime]:
        """``key``'s attempts inside the window ending ``now`` (older ones dropped)."""
        hits = self._hits.get(key)
        if hits is None:
            return deque()
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if not hits:
            del self._hits[key]
        return hits

    def __len__(self) -> int:
        """How many keys the table holds."""
        return len(self._hits)


def attempt_wait(*checks: tuple[RateLimiter, str]) -> int:
    """Check every ``(limiter, key)`` first, then record the attempt in all of them: the
    seconds to wait (the longest) when any refuses, in which case none records it. The
    limiters are held together meanwhile (always taken in the order given)."""
    with ExitStack() as held:
        for limiter, _key in checks:
            held.enter_context(limiter._lock)
        wait = max((limiter.retry_after(key) for limiter, key in checks), default=0)
        if wait:
            return wait
        for limiter, key in checks:
            limiter.hit(key)
        return 0
