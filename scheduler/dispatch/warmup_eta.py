"""Warm-up in ``campaign plan``'s estimate: where each sender is on its ramp, and its caps.

Pure functions of their arguments (the start time is passed in). A sender's warm-up day at
the plan's start follows the engine's rule (:func:`scheduler.dispatch.warmup.day_today`:
the stored day, one more after a day it sent while healthy, day 1 again after an idle
spell). From there the estimate gives it the ramp's cap of each local day, one step up per
day on which it sends (:data:`scheduler.dispatch.pacing.DayCaps`), as if it stayed healthy:
a throttled or held sender does not move up its ramp, so the real days may be more.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.dispatch.pacing import DayCaps
from scheduler.dispatch.warmup import cap_for_day, describe, is_warming
from scheduler.settings.senders import WarmupProfile


def ramp_caps(profile: WarmupProfile, day: int, normal_cap: int | None) -> DayCaps:
    """The caps of a sender on warm-up ``day`` at the start: ``caps(n)`` is the cap after
    ``n`` days with sends (0: the start's day), the normal cap once the ramp is done."""
    def caps(sent_days: int) -> int | None:
        return cap_for_day(profile, day + sent_days, normal_cap)

    return caps


@dataclass(frozen=True)
class RampStart:
    """A warming sender at the plan's start: its ramp, its day and that day's cap."""

    sender: str
    profile: WarmupProfile
    day: int
    cap: int | None

    def line(self) -> str:
        """``s1 warming: day 3 of 8, 65 today``."""
        return describe(self.sender, self.profile, self.day, self.cap)

    def as_dict(self) -> dict[str, object]:
        """The plan's ``--json`` entry."""
        return {"sender": self.sender, "day": self.day, "days": self.profile.days,
                "cap_today": self.cap, "first_cap": self.profile.first_cap,
                "growth": self.profile.growth}


def ramp_start(sender: str, profile: WarmupProfile | None, day: int,
               normal_cap: int | None) -> RampStart | None:
    """``sender`` on its ramp on warm-up ``day`` (None: no ramp, or the ramp is done)."""
    if profile is None or not is_warming(profile, day):
        return None
    return RampStart(sender, profile, day, cap_for_day(profile, day, normal_cap))


__all__ = ["RampStart", "ramp_caps", "ramp_start"]
