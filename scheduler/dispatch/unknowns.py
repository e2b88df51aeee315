"""Judging ``unknown`` deliveries once the service can no longer prove them sent.

A send left ``unknown`` (in flight at a crash, or a time-out) is proven sent by its
``messages.sent`` event whenever that arrives (tracking turns the row ``sent``). The
service retries a webhook it could not deliver about seven times, 5 to 160 s apart, so the
last retry comes about 315 s after the first attempt; after :data:`RETRY_HORIZON` no proof
can come any more. Then a row with no proof is:

- **unproven** (the service did not accept it) when the receiver that was listening when
  it was sent kept listening either for the first attempt (:data:`FIRST_ATTEMPT`) or for the
  last retry (:data:`LAST_RETRY`): the event would have arrived. Re-sending exactly these is
  safe; ``campaign resend RUN --unproven`` does it, or ``resend_unproven = true`` in the
  campaign file makes the run do it by itself.
- **unknowable** when the receiver was down for both, or there was none (a remote service
  without ``webhook_url``): only the recipient's phone can tell.

Pure functions over fixed datetimes; the ledger supplies the rows and the intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler.display import clock_time
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.runs import Ledger

#: After this, the service has stopped retrying a webhook (service-facts: 7 tries, ~315 s).
RETRY_HORIZON = timedelta(minutes=6)
#: The first delivery attempt of an event: right after the send.
FIRST_ATTEMPT = (timedelta(0), timedelta(seconds=30))
#: Where the last retry falls (about 315 s after the first attempt).
LAST_RETRY = (timedelta(seconds=300), RETRY_HORIZON)
#: A receiver writes "still listening" every few seconds; a gap shorter than this is none.
HEARTBEAT_SLACK = timedelta(seconds=15)


@dataclass
class UnknownVerdicts:
    """The ``unknown`` rows of a run, sorted by what can still be said of them."""

    waiting: list[int] = field(default_factory=list)
    unproven: list[int] = field(default_factory=list)
    unknowable: list[int] = field(default_factory=list)
    #: When the last waiting row's horizon ends.
    settles_at: datetime | None = None

    @property
    def total(self) -> int:
        """How many rows are ``unknown``."""
        return len(self.waiting) + len(self.unproven) + len(self.unknowable)

    def describe(self, run_id: int, zone: str = "UTC") -> list[str]:
        """What to tell a person about these rows, one line each (times in ``zone``, the
        campaign's); empty when none."""
        lines = []
        if self.waiting:
            until = f" (until {clock_time(self.settles_at, zone)})" if self.settles_at else ""
            lines.append(f"{len(self.waiting):,} unknown: the service may still prove them "
                         f"sent{until}; look again later")
        if self.unproven:
            lines.append(f"{len(self.unproven):,} unknown with no proof while the receiver "
                         "listened through the service's retries: the service did not take "
                         f"them; `campaign resend {run_id} --unproven` sends exactly those")
        if self.unknowable:
            lines.append(f"{len(self.unknowable):,} unknown that nothing can settle (the "
                         "receiver was not listening when their proof would have come): "
                         f"`campaign resend {run_id} --unknown` may reach someone twice")
        return lines


#: When a receiver listened: (URL key, started, last seen); the ledger answers
#: :class:`~scheduler.ledger.rows.UptimeInterval`.
Interval = tuple[str, datetime, datetime]


def _covered(start: datetime, end: datetime, key: str, intervals: Sequence[Interval]) -> bool:
    """Whether receivers at ``key`` listened through ``[start, end]`` without a real gap."""
    reach = start
    for k, began, last in sorted(intervals, key=lambda i: i[1]):
        if k != key or last + HEARTBEAT_SLACK < reach:
            continue
        if began > reach:
            return False
        reach = max(reach, last + HEARTBEAT_SLACK)
        if reach >= end:
            return True
    return reach >= end


def _key_at(moment: datetime, intervals: Sequence[Interval]) -> str | None:
    for key, began, last in intervals:
        if began - HEARTBEAT_SLACK <= moment <= last + HEARTBEAT_SLACK:
            return key
    return None


def judge_unknowns(rows: Sequence[tuple[int, datetime | None]],
                   intervals: Sequence[Interval], now: datetime) -> UnknownVerdicts:
    """Sort ``(id, dispatched_at)`` rows (:class:`~scheduler.ledger.rows.UnknownRow`) into
    waiting, unproven and unknowable at ``now``."""
    out = UnknownVerdicts()
    for row_id, sent_at in rows:
        if sent_at is None:
            out.unknowable.append(row_id)
            continue
        if sent_at + RETRY_HORIZON > now:
            out.waiting.append(row_id)
            ends = sent_at + RETRY_HORIZON
            out.settles_at = ends if out.settles_at is None else max(out.settles_at, ends)
            continue
        key = _key_at(sent_at, intervals)
        heard = key is not None and any(
            _covered(sent_at + a, sent_at + b, key, intervals)
            for a, b in (FIRST_ATTEMPT, LAST_RETRY))
        (out.unproven if heard else out.unknowable).append(row_id)
    return out


def judge_run(ledger: Ledger, run_id: int, now: datetime) -> UnknownVerdicts:
    """Judge the ``unknown`` rows of a run against the ledger's receiver uptime."""
    with ledger.read(f"read the unknown rows of run {run_id}") as conn:
        rows = uq.unknown_rows(conn, run_id)
        if not rows:
            return UnknownVerdicts()
        times = [row.dispatched_at for row in rows if row.dispatched_at is not None]
        since = (min(times) if times else now) - RETRY_HORIZON
        intervals = uq.uptime_intervals(conn, since)
    return judge_unknowns(rows, intervals, now)


def requeue_unproven(ledger: Ledger, run_id: int, now: datetime) -> int:
    """Queue the run's unproven rows again (never the waiting or unknowable ones)."""
    verdicts = judge_run(ledger, run_id, now)
    if not verdicts.unproven:
        return 0
    return ledger.requeue(run_id, ["unknown"], ids=verdicts.unproven)
