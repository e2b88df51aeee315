"""Pacing maths: rates, jitter, per-sender pacing, daily caps and finish-time estimates.

Pure functions of their arguments: the clock (``now``) and randomness (a
:class:`random.Random`) are always passed in, so tests use fixed datetimes and seeds.

The rate and jitter texts are read by :mod:`scheduler.core.units`; this module does the maths.
Semantics, shared by the dispatcher and ``campaign plan``:

- **rate** (``"30/min"``) is a ceiling per sender, a token bucket of ``burst`` tokens
  (default 1: sends are at least ``1/rate`` apart, never a burst).
- **jitter** (``"2s-8s"``) is a random pause drawn after each send, uniform between the two
  bounds; the next send waits for both the bucket and the pause. The mean interval between
  two sends is therefore ``E[max(1/rate, U(lo, hi))]`` (:func:`mean_interval`).
- **daily cap** counts sends per local day of the campaign's time zone.
- **plan limit** (the service's quota from ``GET /api/v1/limits/{sessionId}``) counts sends
  until ``resets_at`` and then per period of a day.
- **warm-up**: a sender on its ramp has a cap per day that grows with each local day on
  which it sent (:data:`DayCaps`, from :mod:`scheduler.dispatch.warmup_eta`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo

from scheduler.dispatch.windows import SendWindow, next_local_midnight


def mean_interval(rate: float, jitter: tuple[float, float] = (0.0, 0.0)) -> float:
    """Mean seconds between two sends of one sender: ``E[max(1/rate, U(lo, hi))]``."""
    floor = 1.0 / rate
    low, high = jitter
    if high <= floor:
        return floor
    if low >= floor or high == low:
        return max(floor, (low + high) / 2)
    # P(U < floor) * floor + integral of u over [floor, high] / (high - low)
    return (floor * (floor - low) + (high * high - floor * floor) / 2) / (high - low)


def _ts(dt: datetime) -> float:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"{dt!r} is naive: pass a time-zone-aware datetime")
    return dt.timestamp()


def _ceil_delta(seconds: float) -> timedelta:
    """``seconds`` as a timedelta, rounded up to the next microsecond."""
    return timedelta(microseconds=math.ceil(seconds * 1_000_000 - 1e-6))


@dataclass
class DailyCounter:
    """Sends counted per local day of ``tz``; ``cap`` None means unlimited."""

    cap: int | None
    tz: tzinfo = UTC
    _counts: dict[date, int] = field(default_factory=dict, repr=False)

    def _day(self, at: datetime) -> date:
        _ts(at)
        return at.astimezone(self.tz).date()

    def count(self, at: datetime) -> int:
        """Sends recorded on ``at``'s local day."""
        return self._counts.get(self._day(at), 0)

    def remaining(self, at: datetime) -> float:
        """Sends still allowed on ``at``'s local day (``inf`` without a cap)."""
        return math.inf if self.cap is None else max(0, self.cap - self.count(at))

    def record(self, at: datetime, n: int = 1) -> None:
        """Count ``n`` sends at ``at``; days older than a week are forgotten."""
        day = self._day(at)
        self._counts[day] = self._counts.get(day, 0) + n
        for old in [d for d in self._counts if (day - d).days > 7]:
            del self._counts[old]

    def set_count(self, at: datetime, n: int) -> None:
        """``n`` sends on ``at``'s local day, as counted elsewhere (the ledger)."""
        self._counts[self._day(at)] = n

    def next_reset(self, at: datetime) -> datetime:
        """The first instant of the next local day (UTC)."""
        return next_local_midnight(at, self.tz)


class SenderPace:
    """One sender's pace: token bucket, jitter pause and daily cap; no clock of its own."""

    def __init__(
        self,
        rate: float,
        *,
        rng: random.Random,
        jitter: tuple[float, float] = (0.0, 0.0),
        burst: int = 1,
        daily_cap: int | None = None,
        tz: tzinfo = UTC,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate = rate
        self.jitter = jitter
        self.burst = burst
        self.rng = rng
        self.daily = DailyCounter(daily_cap, tz)
        self._tokens = float(burst)
        self._stamp: datetime | None = None  # when _tokens was last brought up to date (UTC)
        self._last_send: datetime | None = None
        self._pause = 0.0

    def _tokens_at(self, at: datetime) -> float:
        if self._stamp is None:
            return self._tokens
        elapsed = (at - self._stamp).total_seconds()  # exact to the microsecond
        return min(float(self.burst), self._tokens + elapsed * self.rate)

    def next_allowed(self, now: datetime) -> datetime:
        """The earliest instant at or after ``now`` when this sender may send again.

        Waits are rounded up to the microsecond, so a send is never allowed early.
        """
        _ts(now)
        at = now.astimezone(UTC)
        tokens = self._tokens_at(at)
        if tokens < 1.0:
            at += _ceil_delta((1.0 - tokens) / self.rate)
        if self._last_send is not None:
            at = max(at, self._last_send + _ceil_delta(self._pause))
        while self.daily.remaining(at) <= 0:
            at = self.daily.next_reset(at)
        return now if at == now else at.astimezone(now.tzinfo)

    def record_send(self, at: datetime, *, count_day: bool = True) -> None:
        """Count a send made at ``at``: take a token, draw the next pause, count the day
        (unless ``count_day``: a send the day's count already holds)."""
        _ts(at)
        at_utc = at.astimezone(UTC)
        self._tokens = self._tokens_at(at_utc) - 1.0
        self._stamp = at_utc
        self._last_send = at_utc
        low, high = self.jitter
        self._pause = self.rng.uniform(low, high) if high > 0 else 0.0
        if count_day:
            self.daily.record(at)

    def resume_from(self, sends: Sequence[datetime]) -> None:
        """Go on from sends made through this sender elsewhere (its previous holder's, as
        the ledger recorded them), as if they had been made here: each, oldest first,
        spends a token and the last one starts a jitter pause, so a hand-off never bunches
        sends. None is counted in the day (the ledger's count of the day holds them); one
        not later than this pace's own latest send changes nothing."""
        for at in sorted({at.astimezone(UTC) for at in sends if self._last_send is None
                          or _ts(at) > self._last_send.timestamp()}):
            self.record_send(at, count_day=False)


@dataclass(frozen=True)
class Quota:
    """A service plan limit for one sender: ``limit`` per period, ``used`` until ``resets_at``."""

    limit: int | None = None
    used: int = 0
    resets_at: datetime | None = None


#: A sender's daily cap by day with sends: ``caps(n)`` is the cap of the local day after
#: ``n`` earlier days on which it sent (0: the first day), None for no cap (warm-up).
DayCaps = Callable[[int], int | None]


def _limit(cap: int | None) -> float:
    return math.inf if cap is None else cap


@dataclass
class _Budget:
    limit: float
    used: int
    reset_at: datetime
    period: timedelta | None  # None: the next local midnight of tz
    tz: tzinfo
    #: A daily budget whose cap grows with each day on which the sender sent (warm-up).
    caps: DayCaps | None = None
    sent_days: int = 0

    def roll(self, at: datetime) -> None:
        """Start the periods that began by ``at`` (usage back to zero; a warm-up budget
        moves to its next day's cap after a day with sends)."""
        while at >= self.reset_at:
            if self.caps is not None and self.used > 0:
                self.sent_days += 1
                self.limit = _limit(self.caps(self.sent_days))
            self.used = 0
            if self.period is None:
                self.reset_at = next_local_midnight(self.reset_at, self.tz)
            else:
                self.reset_at += self.period

    def left(self) -> float:
        """Sends still allowed in the current period."""
        return self.limit - self.used


@dataclass(frozen=True)
class Estimate:
    """Estimated finish of a set of deliveries: overall and per sender (``None``: no work)."""

    start: datetime
    finish: datetime
    per_sender: tuple[datetime | None, ...]
    interval_s: float

    @property
    def duration(self) -> timedelta:
        """Elapsed time from start to finish (computed in UTC, so DST changes count)."""
        return self.finish.astimezone(UTC) - self.start.astimezone(UTC)


def sender_finish(
    count: int,
    *,
    start: datetime,
    interval_s: float,
    window: SendWindow | None = None,
    daily_cap: int | None = None,
    quota: Quota | None = None,
    tz: tzinfo = UTC,
    max_days: int = 3660,
    day_caps: DayCaps | None = None,
) -> datetime:
    """When one sender's ``count``-th send happens, sending every ``interval_s`` seconds.

    ``day_caps`` (warm-up) replaces ``daily_cap``: the cap of each local day, growing with
    each day on which the sender sent (a day it could not send, its window closed, does not
    move the ramp)."""
    if count <= 0:
        return start
    at = start.astimezone(UTC)
    first = _limit(day_caps(0) if day_caps is not None else daily_cap)
    budgets = [_Budget(first, 0, next_local_midnight(at, tz), None, tz, caps=day_caps)]
    if quota is not None and quota.limit is not None:
        reset = quota.resets_at.astimezone(UTC) if quota.resets_at else next_local_midnight(at, tz)
        budgets.append(_Budget(quota.limit, quota.used, reset, timedelta(days=1), tz))
    remaining, step = count, timedelta(seconds=interval_s)
    deadline = at + timedelta(days=max_days)
    while at < deadline:
        if window is not None:
            at = window.next_open(at).astimezone(UTC)
        for budget in budgets:
            budget.roll(at)
        exhausted = [b for b in budgets if b.left() <= 0]
        if exhausted:
            at = min(b.reset_at for b in exhausted)
            continue
        end = min(b.reset_at for b in budgets)
        if window is not None:
            closes = window.closes_at(at)
            end = min(end, closes.astimezone(UTC)) if closes else end
        fits = math.floor((end - at) / step) + 1 if interval_s > 0 else remaining
        while at + step * (fits - 1) >= end and fits > 1:  # float edge: last send before end
            fits -= 1
        batch = int(min(remaining, fits, *(b.left() for b in budgets)))
        remaining -= batch
        for budget in budgets:
            budget.used += batch
        if remaining == 0:
            return (at + step * (batch - 1)).astimezone(start.tzinfo)
        at = max(at + step * batch, at + timedelta(microseconds=1))
    raise ValueError(f"{count} sends do not finish within {max_days} days")


def estimate_finish(
    counts: Sequence[int],
    *,
    start: datetime,
    rate: float,
    jitter: tuple[float, float] = (0.0, 0.0),
    window: SendWindow | None = None,
    daily_cap: int | None = None,
    quotas: Sequence[Quota | None] | None = None,
    tz: tzinfo = UTC,
    extra_delay_s: float = 0.0,
    day_caps: Sequence[DayCaps | None] | None = None,
) -> Estimate:
    """Estimated finish of ``counts[i]`` deliveries on sender ``i``, senders in parallel.

    Uses the mean interval (rate and jitter mean), the window, the daily cap (or sender
    ``i``'s warm-up caps ``day_caps[i]``, when given) and each sender's plan quota;
    ``extra_delay_s`` (the steps' delays) is added to the last finish.
    """
    _ts(start)
    interval = mean_interval(rate, jitter)
    per_sender: list[datetime | None] = []
    for index, count in enumerate(counts):
        quota = quotas[index] if quotas and index < len(quotas) else None
        ramp = day_caps[index] if day_caps and index < len(day_caps) else None
        per_sender.append(
            sender_finish(
                count,
                start=start,
                interval_s=interval,
                window=window,
                daily_cap=daily_cap,
                quota=quota,
                tz=tz,
                day_caps=ramp,
            )
            if count
            else None
        )
    finishes = [f for f in per_sender if f is not None]
    finish = max(finishes) if finishes else start
    if extra_delay_s and finishes:
        finish = (finish.astimezone(UTC) + timedelta(seconds=extra_delay_s)).astimezone(
            start.tzinfo
        )
        if window is not None:
            finish = window.next_open(finish)
    return Estimate(start, finish, tuple(per_sender), interval)
