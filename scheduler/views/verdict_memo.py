"""A run's ``unknown`` verdicts, judged again only when what they are judged from changed
(issue 34, H1: the run's view at 1,000,000 rows spent most of its time reading and judging
its 10,000 ``unknown`` rows on every read).

A judgement (:func:`scheduler.dispatch.unknowns.judge_unknowns`) depends on the run's
``unknown`` rows and their dispatch times, the receivers' uptime, the rows with a stray
proof, and the moment. Once every row's horizon has ended (and the heartbeat slack with
it), the moment no longer matters and only the uptime up to the last horizon does: such a
settled judgement is kept, per ledger and run (its id and when it was made), and given
again while

- the rows are the same (``Marks.unknown``:
  their count and id sums, from an index alone) and none was sent again (its dispatch
  time moves: the digest of its sends per minute, ``Marks.minutes``),
- no event arrived since (a new ``messages.sent`` may be a stray proof), and no row had
  a stray proof (such a proof stops being stray when a row takes its message id),
- the uptime intervals, cut at the last horizon's end, are the same (read each time: a
  few rows).

Every mark is read in one round trip
(:meth:`~scheduler.ledger.run_reads.VerdictReads.marks`; a run's view reads them once
for both memos). ``listening`` (a receiver heard lately) is read anew each time. Anything
else is judged as before, so the answer is always the full judgement's. A kept judgement
also keeps the lines of its :meth:`~scheduler.dispatch.unknowns.UnknownVerdicts.reasons`
per time zone.

The run's skipped rows by kind of reason (:func:`kept_skips`) are kept the same way while
the skipped rows are the same (a skipped row's reason never changes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from scheduler.dispatch.unknowns import HEARTBEAT_SLACK, UnknownVerdicts, judge_unknowns
from scheduler.ledger.access import Connection
from scheduler.ledger.rows import UptimeInterval
from scheduler.ledger.run_reads import VerdictReads
from scheduler.ledger.run_rows import Marks

#: How many judgements are kept (the least recently used go first).
KEPT = 64

Key = tuple[str, int, str, float]
Cut = tuple[tuple[str | None, datetime, datetime], ...]


@dataclass
class _Settled(UnknownVerdicts):
    """A settled judgement: its reasons' lines kept per time zone (shared by its copies)."""

    said: dict[str, list[str]] = field(default_factory=dict)

    def reasons(self, zone: str = "UTC") -> list[str]:
        """As :meth:`UnknownVerdicts.reasons`, worked out once per zone."""
        if zone not in self.said:
            self.said[zone] = super().reasons(zone)
        return list(self.said[zone])


@dataclass(frozen=True)
class _Kept:
    rows: tuple[int, int, int, str]
    newest_event: int
    since: datetime
    last_end: datetime
    cut: Cut
    verdicts: UnknownVerdicts


_kept: OrderedDict[Key, _Kept] = OrderedDict()
_skips: OrderedDict[tuple[str, int, str], tuple[tuple[int, int, int], dict[str, int]]] = \
    OrderedDict()
_lock = threading.Lock()


def _ledger(conn: Connection) -> str:
    return conn.engine.url.render_as_string(hide_password=True)


def _cut(intervals: list[UptimeInterval], last_end: datetime) -> Cut:
    """The intervals as the settled rows see them: up to ``last_end``."""
    return tuple((i.url_key, i.started_at, min(i.last_seen_at, last_end))
                 for i in intervals if i.started_at <= last_end)


def _listening(intervals: list[UptimeInterval], now: datetime) -> bool:
    recent = now - HEARTBEAT_SLACK
    return any(i.stopped_at is None and i.last_seen_at >= recent for i in intervals)


def kept_verdicts(conn: Connection, run_id: int, now: datetime, horizon: timedelta, *,
                  marks: Marks | None = None) -> UnknownVerdicts:
    """The run's ``unknown`` verdicts at ``now``: the kept judgement when nothing it
    depends on changed, else a full one (kept when settled). ``marks``: the run's, read
    on ``conn`` already (:meth:`~scheduler.ledger.run_reads.VerdictReads.marks`)."""
    reads = VerdictReads(conn)
    marks = marks if marks is not None else reads.marks(run_id)
    key: Key = (_ledger(conn), run_id, marks.born, horizon.total_seconds())
    rows = (*marks.unknown, marks.minutes)
    newest = marks.newest_event
    with _lock:
        kept = _kept.get(key)
    if kept is not None and kept.rows == rows and kept.newest_event == newest:
        intervals = reads.uptime(kept.since)
        if _cut(intervals, kept.last_end) == kept.cut:
            with _lock:
                _kept.move_to_end(key)
            return replace(kept.verdicts, listening=_listening(intervals, now))
    found = reads.unknown_rows(run_id)
    if not found:
        return UnknownVerdicts()
    times = [row.dispatched_at for row in found if row.dispatched_at is not None]
    intervals = reads.uptime((min(times) if times else now) - horizon)
    stray = reads.stray_proofs(run_id)
    verdicts = judge_unknowns(found, intervals, now, horizon=horizon, stray=stray)
    if (not stray and len(times) == len(found)
            and max(times) + horizon + HEARTBEAT_SLACK < now):
        since, last_end = min(times) - horizon, max(times) + horizon
        settled = _Settled(**{name: getattr(verdicts, name) for name in (
            "waiting", "unproven", "unknowable", "settles_at", "gaps", "causes",
            "listening")})
        with _lock:
            _kept[key] = _Kept(rows, newest, since, last_end, _cut(intervals, last_end),
                               settled)
            _kept.move_to_end(key)
            while len(_kept) > KEPT:
                _kept.popitem(last=False)
    return verdicts


def kept_skips(conn: Connection, run_id: int, *,
               marks: Marks | None = None) -> dict[str, int]:
    """:meth:`~scheduler.ledger.run_reads.VerdictReads.skipped_by_kind`, read again only
    when the run's skipped rows changed (``marks``: as :func:`kept_verdicts`)."""
    reads = VerdictReads(conn)
    marks = marks if marks is not None else reads.marks(run_id)
    key = (_ledger(conn), run_id, marks.born)
    mark = marks.skipped
    with _lock:
        kept = _skips.get(key)
    if kept is not None and kept[0] == mark:
        return dict(kept[1])
    kinds = reads.skipped_by_kind(run_id)
    with _lock:
        _skips[key] = (mark, dict(kinds))
        _skips.move_to_end(key)
        while len(_skips) > KEPT:
            _skips.popitem(last=False)
    return kinds
