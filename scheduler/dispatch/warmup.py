"""Warm-up of a sender new to the project, or back after an idle spell: a daily cap that grows.

Community practice for unofficial WhatsApp numbers (not a guarantee that a number is safe):
a new number sends little at first and more each day it stays healthy. The default ramp
is 20 sends on day 1, times 1.8 a day (20, 36, 65, 117, 210, 378, 680), then the sender's
normal cap from day 8 on; a sender idle for 72 hours starts again at day 1. A day counts
only when the sender sent that day and stayed healthy (not throttled, paused or
disconnected), so trouble holds the ramp where it is. Pure functions of their arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from scheduler.settings.senders import WarmupProfile

#: The ramp of a sender with no profile of its own.
DEFAULT_PROFILE = WarmupProfile()


def cap_for_day(profile: WarmupProfile, day: int, normal_cap: int | None) -> int | None:
    """The daily cap on warm-up ``day`` (1-based): ``first_cap × growth^(day-1)`` before
    ``profile.days``, never above the sender's ``normal_cap``; from ``profile.days`` on, the
    normal cap (None: no cap)."""
    if day >= profile.days:
        return normal_cap
    cap = max(1, round(profile.first_cap * profile.growth ** (max(day, 1) - 1)))
    return cap if normal_cap is None else min(cap, normal_cap)


def is_warming(profile: WarmupProfile | None, day: int) -> bool:
    """Whether ``day`` is still on the ramp (False without a profile: warm-up is off)."""
    return profile is not None and day < profile.days


@dataclass(frozen=True)
class WarmDay:
    """Where a sender is on its ramp: the day, and the local date it was set for."""

    day: int
    on: date | None


def day_today(profile: WarmupProfile, current: WarmDay, today: date, *,
              last_sent_at: datetime | None, last_sent_on: date | None, now: datetime,
              healthy: bool) -> WarmDay:
    """The warm-up day of ``today`` (the sender's local date).

    - idle for ``idle_restart_h`` or more (its latest send, any run): day 1 again;
    - a new date after a date on which it sent while healthy: the next day;
    - a new date otherwise (it did not send, or was not healthy): the same day;
    - the same date: unchanged.
    """
    idle = timedelta(hours=profile.idle_restart_h)
    if last_sent_at is not None and now - last_sent_at >= idle and current.day > 1:
        return WarmDay(1, today)
    if current.on is None:
        return WarmDay(max(current.day, 1), today)
    if today <= current.on:
        return current
    sent_on_it = last_sent_on is not None and last_sent_on >= current.on
    return WarmDay(current.day + 1 if (sent_on_it and healthy) else current.day, today)


def day_at(profile: WarmupProfile, *, warm_day: int, warm_day_date: date | None,
           last_sent_at: datetime | None, healthy: bool, at: datetime, tz: tzinfo) -> int:
    """The sender's warm-up day at ``at`` (its local date in ``tz``), from its profile's
    ``warm_day`` and ``warm_day_date`` (day 1 and None for a sender with no profile), its
    latest send (any run) and whether it is warming or healthy now."""
    last_on = last_sent_at.astimezone(tz).date() if last_sent_at is not None else None
    return day_today(profile, WarmDay(warm_day, warm_day_date), at.astimezone(tz).date(),
                     last_sent_at=last_sent_at, last_sent_on=last_on, now=at,
                     healthy=healthy).day


def describe(name: str, profile: WarmupProfile, day: int, cap: int | None) -> str:
    """``s1 warming: day 3 of 8, 65 today`` (the plan's ETA and the timeline say it)."""
    today = "no cap today" if cap is None else f"{cap} today"
    return f"{name} warming: day {day} of {profile.days}, {today}"


__all__ = ["DEFAULT_PROFILE", "WarmDay", "WarmupProfile", "cap_for_day", "day_at", "day_today",
           "describe", "is_warming"]
