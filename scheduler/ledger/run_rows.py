"""A run's view as the ledger hands it over: plain data (no queries).

:class:`Tally` is a run's trigger-kept counters (read by :mod:`.queries.tallies`, its
``marks`` bits :data:`MARKS`); :class:`RecentSends`, :class:`ErrorRow`, :class:`EventRow`
and :class:`SmsFailureRow` the bounded reads of a run's page (:mod:`.run_reads`);
:class:`Marks` what a run's kept verdicts depend on (:mod:`.queries.verdict_marks`).
The doors that return them: :mod:`scheduler.ledger.run_reads`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from scheduler.ledger.states import CONFIRMED_SENT_STATES, SENT_STATES
from scheduler.ledger.states import DeliveryState as S

#: The bit of each time column in ``run_tallies.marks`` (``replied``: a reply's time or text).
MARKS: dict[str, int] = {"accepted": 1, "sent": 2, "delivered": 4, "read": 8, "replied": 16,
                         "ended": 32}
ACCEPTED, SENT, DELIVERED, READ, REPLIED, ENDED = (MARKS[k] for k in MARKS)

_SENT = frozenset(str(s) for s in SENT_STATES)
_CONFIRMED = frozenset(str(s) for s in CONFIRMED_SENT_STATES)


@dataclass(frozen=True, slots=True)
class Tally:
    """One run's counters summed over shards: ``(step, state, marks, worker, n)`` rows."""

    rows: tuple[tuple[int, str, int, str, int], ...]

    def states(self) -> dict[str, int]:
        """Rows in each state (only states that have rows)."""
        out: dict[str, int] = defaultdict(int)
        for _step, state, _marks, _worker, n in self.rows:
            out[state] += n
        return {state: n for state, n in out.items() if n}

    def steps(self) -> dict[int, dict[str, int]]:
        """Rows of each step in each state."""
        out: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for step, state, _marks, _worker, n in self.rows:
            out[step][state] += n
        return {step: {s: n for s, n in states.items() if n}
                for step, states in sorted(out.items()) if any(states.values())}

    def workers(self) -> dict[str, int]:
        """Rows each ``campaign serve`` worker claimed (rows with no worker left out)."""
        out: dict[str, int] = defaultdict(int)
        for _step, _state, _marks, worker, n in self.rows:
            if worker:
                out[worker] += n
        return {worker: n for worker, n in sorted(out.items()) if n}

    def count(self, state: frozenset[str] | None = None, marks: int = 0) -> int:
        """Rows in one of ``states`` or with any of the ``marks`` bits set."""
        return sum(n for _step, s, m, _worker, n in self.rows
                   if (state is not None and s in state) or m & marks)

    def funnel(self) -> dict[str, int]:
        """The report's funnel (``scheduler.ledger.funnel``, ``campaign status``): planned,
        sent, delivered, read, replied, answered, undelivered, skipped; the same conditions
        as ``queries.reports.state_groups``, so status and report agree."""
        return {
            "planned": sum(n for _st, s, _m, _w, n in self.rows if s != S.SKIPPED),
            "sent": self.count(_SENT, ACCEPTED | SENT | DELIVERED | READ),
            "delivered": self.count(frozenset({S.DELIVERED, S.READ}), DELIVERED | READ),
            "read": self.count(frozenset({S.READ}), READ),
            "replied": self.count(None, REPLIED),
            "answered": self.count(frozenset({S.ANSWERED})),
            "undelivered": self.count(frozenset({S.UNDELIVERED})),
            "skipped": self.count(frozenset({S.SKIPPED})),
        }

    def tracking(self) -> dict[str, int]:
        """How far the rows got by their events (``tq.funnel``): sent (a sent time or a
        state the service confirmed), delivered, read, replied."""
        return {
            "sent": self.count(_CONFIRMED, SENT),
            "delivered": self.count(frozenset({S.DELIVERED, S.READ, S.ANSWERED}), DELIVERED),
            "read": self.count(frozenset({S.READ}), READ),
            "replied": self.count(None, REPLIED),
        }


class RecentSends(NamedTuple):
    """A sender's or a worker's sends of a run since a time, and the newest of them."""

    n: int
    last_at: datetime | None


class ErrorRow(NamedTuple):
    """Failed rows of one state with the same message, and the newest one's time."""

    state: str
    message: str
    n: int
    last_at: datetime | None


class EventRow(NamedTuple):
    """One of a run's recent events or replies."""

    id: int
    event: str
    at: datetime | None
    number: str | None
    payload: str | None
    #: The delivery's CSV values (``deliveries.variables``, JSON text), when matched.
    variables: str | None = None


class SmsFailureRow(NamedTuple):
    """Undelivered SMS of one report and error code (all of a run's, or over its newest
    rows sampled)."""

    event: str | None
    code: str | None
    n: int


class Marks(NamedTuple):
    """Every mark of one run, read in one statement (``verdict_marks.read_marks``)."""

    #: When the run was made, as text (empty: no such run): a ledger made again at the same
    #: place gives its run of the same id another moment.
    born: str
    #: Of the run's ``unknown`` (``skipped``) rows: how many, the sum of their ids, the sum
    #: of the squares of their ids modulo ``verdict_marks.MODULUS``. Rows entering or
    #: leaving the state change it (swaps with equal counts, sums and sums of squares
    #: would not); a skipped row's reason never changes.
    unknown: tuple[int, int, int]
    skipped: tuple[int, int, int]
    #: The newest event's id (0: none): a new proof (a ``messages.sent`` that may match no
    #: row) changes it.
    newest_event: int
    #: A digest of the run's sends per minute (``run_minutes``, kept by triggers: a few
    #: thousand rows for a run of 1,000,000), made by the database: a row sent again moves
    #: to a later minute and changes it, though it leaves and enters ``unknown`` between.
    minutes: str
