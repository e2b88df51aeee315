"""Judging ``unknown`` deliveries once the service can no longer prove them sent.

A send left ``unknown`` (in flight at a crash, or a time-out) is proven sent by its
``messages.sent`` event whenever that arrives (tracking turns the row ``sent``). The
service retries a webhook it could not deliver about seven times, 5 to 160 s apart, to the
URL registered when the message was sent; after its retry horizon (the setting
``webhook_retry_horizon_s``, :data:`RETRY_HORIZON` by default) no proof can come any more.
Then a row with no proof is:

- **unproven** (the service did not take it) only when the product can show it: a receiver
  at the URL its events were posted to listened *without a break* from its dispatch to the
  end of the service's retries (every attempt, the first included, had somewhere to land),
  took every event it was sent meanwhile (a receiver that refused one, 503 when the ledger
  could not be written, starts a new interval: the refusal is a break), and no
  ``messages.sent`` to its number from its sender arrived that matched no row. Re-sending
  exactly these is safe; ``campaign resend RUN --unproven`` does it, or
  ``resend_unproven = true`` in the campaign file makes the run do it by itself.
- **unknowable** otherwise, with the reason in words: no receiver listened for part of that
  time (a process killed, however briefly: no retry schedule is assumed, since a stand-in
  may give up sooner than the service; a run that stopped listening early; no receiver at
  all), a proof arrived that matched no row, or no dispatch time was recorded. The service
  may have taken it; only the recipient's phone can tell.

Pure functions over fixed datetimes; the ledger supplies the rows and the intervals (each
receiver records when it started and, every few seconds, that it still listens).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.core.time_words import clock_time
from scheduler.ledger.rows import UptimeInterval
from scheduler.settings.engine import WEBHOOK_RETRY_HORIZON_S

if TYPE_CHECKING:  # the dispatcher's store; a run's view judges from its own reads
    from scheduler.dispatch.store import UnknownsStore

#: The service's retry horizon by default (the settings' ``webhook_retry_horizon_s``).
RETRY_HORIZON = timedelta(seconds=WEBHOOK_RETRY_HORIZON_S)
#: A receiver records that it listens every 5 s: one heard from this recently may still be
#: listening (its next heartbeat extends its interval). Between two intervals no gap is
#: tolerated: a killed receiver's last heartbeat may be 5 s before it died, and a stand-in
#: may retry every event within a second or two (the sandbox's tests do), so a restart
#: however quick may have swallowed every attempt.
HEARTBEAT_SLACK = timedelta(seconds=15)
#: The most reasons told for the unknowable rows (the rest are counted).
REASONS_SHOWN = 3
#: Why a row with a stray proof is unknowable.
STRAY_PROOF = ("a messages.sent to the number from its sender arrived and matched no row "
               "(the service may have taken it)")


@dataclass(frozen=True)
class Gap:
    """A stretch of a row's horizon when no receiver listened at its events' URL."""

    start: datetime
    end: datetime


@dataclass
class UnknownVerdicts:
    """The ``unknown`` rows of a run, sorted by what can still be said of them."""

    waiting: list[int] = field(default_factory=list)
    unproven: list[int] = field(default_factory=list)
    unknowable: list[int] = field(default_factory=list)
    #: When the last waiting row's horizon ends.
    settles_at: datetime | None = None
    #: Why each unknowable row is so: when nobody listened (``None``: another reason, in
    #: :attr:`causes`).
    gaps: dict[int, Gap | None] = field(default_factory=dict)
    #: The reason in words of each unknowable row that is not a stretch without a receiver.
    causes: dict[int, str] = field(default_factory=dict)
    #: Whether a receiver of the project was heard from lately and has not said it stopped
    #: (it may be listening now).
    listening: bool = False

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
            if not self.listening:
                lines.append("  no receiver listens now: their proof is lost unless "
                             "`campaign receiver` (or `campaign serve`) runs until then")
        if self.unproven:
            lines.append(f"{len(self.unproven):,} unknown with no proof although a receiver "
                         "listened without a break from their send through all the "
                         "service's retries: the service did not take them; "
                         f"`campaign resend {run_id} --unproven` sends exactly those")
        if self.unknowable:
            lines.append(f"{len(self.unknowable):,} unknown that nothing can settle (the "
                         "service may have taken them; only the recipients can tell):")
            lines.extend(f"  {line}" for line in self.reasons(zone))
            lines.append(f"  `campaign resend {run_id} --unknown` sends them again and may "
                         "reach someone twice")
        return lines

    def stop_note(self, zone: str = "UTC") -> str:
        """What to say when a receiver stops listening while these rows may still be
        proven: until when, and how to let their proof arrive."""
        until = f" until {clock_time(self.settles_at, zone)}" if self.settles_at else ""
        return (f"stopped listening with {len(self.waiting):,} sends in doubt: the service "
                f"retries their events{until}; run `campaign receiver` (or `campaign "
                "serve`) until then so that their proof can arrive, or they stay unknown "
                "for good")

    def reasons(self, zone: str = "UTC") -> list[str]:
        """Why the unknowable rows are so, one line per stretch without a receiver (rows
        whose stretch began at the same moment together) or other cause, the most common
        first."""
        groups: dict[datetime | str, list[Gap | None]] = {}
        for row_id in self.unknowable:
            gap = self.gaps.get(row_id)
            # to the second, as told: stretches told alike are one line
            key = (gap.start.replace(microsecond=0) if gap
                   else self.causes.get(row_id, "no dispatch time recorded"))
            groups.setdefault(key, []).append(gap)
        ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
        lines = []
        for key, gaps in ranked[:REASONS_SHOWN]:
            n = f"{len(gaps):,}: "
            if isinstance(key, str):
                lines.append(n + key)
                continue
            end = max(gap.end for gap in gaps if gap is not None)
            lines.append(n + f"no receiver listened from {clock_time(key, zone)} to "
                         f"{clock_time(end, zone)}")
        rest = sum(len(gaps) for _, gaps in ranked[REASONS_SHOWN:])
        if rest:
            lines.append(f"{rest:,}: at other times, no receiver listened (or other causes)")
        return lines


def first_gap(start: datetime, end: datetime, intervals: Sequence[UptimeInterval]
              ) -> Gap | None:
    """The first stretch of ``[start, end]`` that no interval covers; ``None`` when covered.
    An interval covers from its start to its last sign of life (its stop, when it stopped
    of its own accord), never beyond: a killed receiver's last heartbeat may be seconds
    before it died, so the gap found is never shorter than the real one."""
    return _Coverage(intervals).first_gap(start, end)


class _Coverage:
    """Intervals merged once into sorted, disjoint stretches, so that each row's horizon is
    checked by a binary search (a run may leave thousands of rows ``unknown``)."""

    def __init__(self, intervals: Iterable[UptimeInterval]) -> None:
        starts: list[datetime] = []
        ends: list[datetime] = []
        for interval in sorted(intervals, key=lambda i: i.started_at):
            last = max(interval.started_at, interval.last_seen_at)
            if ends and interval.started_at <= ends[-1]:  # touching: no gap between
                ends[-1] = max(ends[-1], last)
            else:  # a start with no later sign of life stays: a gap ends at its start
                starts.append(interval.started_at)
                ends.append(last)
        self.starts = starts
        self.ends = ends

    def first_gap(self, start: datetime, end: datetime) -> Gap | None:
        """As :func:`first_gap`, over these stretches."""
        at = bisect_right(self.starts, start) - 1  # the last stretch starting by ``start``
        if at >= 0 and self.ends[at] > start:  # ``start`` is covered: go to the stretch's end
            if self.ends[at] >= end:
                return None
            start = self.ends[at]
        following = at + 1
        if following < len(self.starts):
            return Gap(start, min(self.starts[following], end))
        return Gap(start, end)


def _row_gap(sent_at: datetime, end: datetime, intervals: Sequence[UptimeInterval],
             coverage: Mapping[str | None, _Coverage]) -> Gap | None:
    """Where no receiver listened at the URL of the row's events within its horizon.

    The events go to the URL registered when the row was sent: a receiver listening then
    has its key. When several did (workers on different ports), each must have covered the
    horizon, since the ledger does not say which one the sender pointed at. ``coverage``:
    the intervals merged per key, and all of them under ``None``."""
    keys = {i.url_key for i in intervals if i.started_at <= sent_at <= i.last_seen_at}
    if not keys:
        return coverage[None].first_gap(sent_at, end) or Gap(sent_at, end)
    found = [coverage[key].first_gap(sent_at, end) for key in sorted(keys)]
    gaps = [gap for gap in found if gap is not None]
    return min(gaps, key=lambda gap: gap.start) if gaps else None


def judge_unknowns(rows: Sequence[tuple[int, datetime | None]],
                   intervals: Sequence[UptimeInterval], now: datetime, *,
                   horizon: timedelta = RETRY_HORIZON,
                   stray: Collection[int] = ()) -> UnknownVerdicts:
    """Sort ``(id, dispatched_at)`` rows (:class:`~scheduler.ledger.rows.UnknownRow`) into
    waiting, unproven and unknowable at ``now``, given the receivers' uptime intervals;
    ``stray``: rows to whose number a proof arrived that matched no row (never unproven).

    A row is waiting until its horizon has passed (``settles_at``), and a few seconds
    longer when the coverage only falls short at a receiver heard from lately: its next
    heartbeat decides."""
    recent = now - HEARTBEAT_SLACK
    heard = {i.last_seen_at for i in intervals
             if i.stopped_at is None and i.last_seen_at >= recent}
    out = UnknownVerdicts(listening=bool(heard))
    coverage: dict[str | None, _Coverage] = {None: _Coverage(intervals)}
    for key in {i.url_key for i in intervals}:
        coverage[key] = _Coverage(i for i in intervals if i.url_key == key)
    for row_id, sent_at in rows:
        if sent_at is None:
            out.unknowable.append(row_id)
            out.gaps[row_id] = None
            continue
        ends = sent_at + horizon
        gap = None if ends > now else _row_gap(sent_at, ends, intervals, coverage)
        if ends > now or (gap is not None and gap.start in heard and gap.end == ends):
            out.waiting.append(row_id)
            out.settles_at = ends if out.settles_at is None else max(out.settles_at, ends)
        elif row_id in stray:
            out.unknowable.append(row_id)
            out.gaps[row_id] = None
            out.causes[row_id] = STRAY_PROOF
        elif gap is None:
            out.unproven.append(row_id)
        else:
            out.unknowable.append(row_id)
            out.gaps[row_id] = gap
    return out


def judge_run(store: UnknownsStore, run_id: int, now: datetime, *,
              horizon: timedelta = RETRY_HORIZON) -> UnknownVerdicts:
    """Judge the ``unknown`` rows of a run against the ledger's receiver uptime (the rows,
    the receivers' uptime since then and the rows with a stray proof, as the store reads
    them)."""
    rows, intervals, stray = store.unknown_facts(run_id, now, horizon)
    if not rows:
        return UnknownVerdicts()
    return judge_unknowns(rows, intervals, now, horizon=horizon, stray=stray)
