"""The webhook receiver's intake counters: requests by route and outcome, and how long
each took, kept in plain Python (no prometheus-client on the receiver's hot path).

The receiver of this process calls :func:`observe` once per webhook request (in
:class:`~scheduler.tracking.receiver.WebhookRoutes`); ``/metrics`` served by the same
process (``campaign serve`` with its dashboard or metrics port) reads :data:`INTAKE` with
:meth:`IntakeStats.snapshot`. A process that runs no receiver (a lone ``campaign
dashboard``) shows zeros. Labels stay bounded: the route (``session``, ``account``) and
the outcome (``stored``, ``refused``, ``failed``), never a number or a payload.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from dataclasses import dataclass

#: Upper bounds of the latency buckets (seconds); the last bucket is +Inf.
BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                              2.5, 5.0)
#: The routes counted (``WebhookRoutes``'s two paths).
ROUTES = ("session", "account")
#: What became of a request: 2xx stored (a repeat too), 4xx refused, 5xx failed.
OUTCOMES = ("stored", "refused", "failed")


def outcome_of(status: int) -> str:
    """``stored`` (2xx), ``refused`` (4xx) or ``failed`` (5xx and anything else)."""
    if 200 <= status < 300:
        return "stored"
    return "refused" if 400 <= status < 500 else "failed"


@dataclass(frozen=True)
class IntakeSnapshot:
    """The counters at one moment: ``requests[(route, outcome)]``; per route the bucket
    counts (not cumulative, one more than :data:`BUCKETS` for +Inf), the sum of seconds."""

    requests: dict[tuple[str, str], int]
    buckets: dict[str, tuple[int, ...]]
    seconds: dict[str, float]


class IntakeStats:
    """Requests and latencies of this process's webhook receivers (thread-safe: a
    receiver may run in a background thread's event loop)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = {(r, o): 0 for r in ROUTES for o in OUTCOMES}
        self._buckets = {r: [0] * (len(BUCKETS) + 1) for r in ROUTES}
        self._seconds = dict.fromkeys(ROUTES, 0.0)

    def observe(self, route: str, status: int, seconds: float) -> None:
        """Count one request to ``route`` answered ``status`` after ``seconds``."""
        if route not in self._seconds:
            return
        with self._lock:
            self._requests[(route, outcome_of(status))] += 1
            self._buckets[route][bisect_left(BUCKETS, seconds)] += 1
            self._seconds[route] += seconds

    def snapshot(self) -> IntakeSnapshot:
        """A consistent copy of the counters."""
        with self._lock:
            return IntakeSnapshot(dict(self._requests),
                                  {r: tuple(b) for r, b in self._buckets.items()},
                                  dict(self._seconds))


#: This process's counters (the receiver's :func:`observe` adds to them).
INTAKE = IntakeStats()


def observe(path: str, status: int, seconds: float) -> None:
    """Count one webhook request to ``path`` (``/webhooks/session`` or
    ``/webhooks/account``) answered ``status`` after ``seconds``."""
    INTAKE.observe(path.rstrip("/").rsplit("/", 1)[-1], status, seconds)
