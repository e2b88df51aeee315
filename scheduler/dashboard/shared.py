"""Reads shared by the live streams: every browser watching the same run (or the overview)
gets the view one read made, so a run watched in ten tabs is read once a second, not ten
times."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from scheduler.core.timeutil import monotonic

#: Entries not used for this long are dropped when the table grows (seconds).
FORGET_AFTER_S = 60.0
#: The table is swept once it holds this many entries.
SWEEP_AT = 256


class SharedReads:
    """The newest view of each live section, by key, with when it was read."""

    def __init__(self, clock: Callable[[], float] = monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._views: dict[str, tuple[float, Any]] = {}

    def read(self, key: str, max_age_s: float, read: Callable[[], Any]) -> Any:
        """The view under ``key`` if it was read less than ``max_age_s`` ago, else
        ``read()`` (kept for the next stream). Two streams missing at once both read: a
        read is never waited for."""
        now = self.clock()
        with self._lock:
            found = self._views.get(key)
        if found is not None and now - found[0] < max_age_s:
            return found[1]
        view = read()
        with self._lock:
            self._views[key] = (self.clock(), view)
            if len(self._views) >= SWEEP_AT:
                self._views = {k: v for k, v in self._views.items()
                               if now - v[0] < FORGET_AFTER_S}
        return view

    def forget(self, key: str) -> None:
        """Drop ``key``'s view (an action changed what it shows: the next read is fresh)."""
        with self._lock:
            self._views.pop(key, None)
