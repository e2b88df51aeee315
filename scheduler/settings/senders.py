"""How the engine looks after the senders: health rules and warm-up, as ``config.toml`` says.

The ``[senders]`` section of :class:`~scheduler.settings.load.Settings` (the engine reads
it too)::

    [senders]
    health = true              # score every sender; throttle or pause it on trouble
    warmup = "default"         # the ramp of senders with none of their own; "off": none
    health_window = "24h"      # the sends the score looks at
    undelivered_after = "6h"   # a send still not delivered after this counts against it

    [senders.profiles.gentle]  # a named ramp (the default one is built in)
    first_cap = 10
    growth = 1.5
    days = 10

    [senders.warmup_of]        # a sender's own ramp, or "off"
    loja-sp-01 = "gentle"
    loja-sp-02 = "off"

Warm-up is off unless a project turns it on: a number with a history elsewhere is not new
to the service, and capping it at 20 a day after an upgrade would surprise its operator.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scheduler.core.units import parse_duration

#: The name of the built-in ramp, and the word that turns warm-up off.
DEFAULT_RAMP, OFF = "default", "off"


class WarmupProfile(BaseModel):
    """A warm-up ramp: the cap of day 1, its growth per day, and when it ends."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_cap: int = Field(20, ge=1, description="Sends allowed on day 1.")
    growth: float = Field(1.8, gt=1.0, le=10.0, description="The cap's factor from one day "
                          "to the next.")
    days: int = Field(8, ge=1, le=365, description="The day the sender reaches its normal "
                      "cap (the ramp covers the days before it).")
    idle_restart_h: float = Field(72.0, gt=0, description="Hours without a send after which "
                                  "the ramp starts again at day 1.")


class SenderCare(BaseModel):
    """The ``[senders]`` settings: health rules and warm-up ramps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    health: bool = Field(True, description="Score every sender from the service's signals "
                         "and throttle or pause it on trouble (false: score and record only).")
    warmup: str = Field(OFF, description="The ramp of senders without one of their own: "
                        "'default', a name under [senders.profiles], or 'off'.")
    health_window: str = Field("24h", description="How far back the score looks (a "
                               "duration: '24h', '90m').")
    undelivered_after: str = Field("6h", description="A send not delivered after this long "
                                   "counts against its sender.")
    profiles: dict[str, WarmupProfile] = Field(default_factory=dict, description="Named "
                                               "ramps; 'default' is built in.")
    warmup_of: dict[str, str] = Field(default_factory=dict, description="A sender's own "
                                      "ramp (a profile name) or 'off'.")

    @model_validator(mode="after")
    def _known_ramps(self) -> SenderCare:
        known = {DEFAULT_RAMP, OFF, *self.profiles}
        for where, name in [("warmup", self.warmup),
                            *((f"warmup_of.{s}", n) for s, n in self.warmup_of.items())]:
            if name not in known:
                raise ValueError(f"senders.{where} = {name!r} names no ramp; known: "
                                 f"{', '.join(sorted(known))}")
        for what in ("health_window", "undelivered_after"):
            parse_duration(getattr(self, what))
        return self

    def ramp_of(self, sender: str) -> WarmupProfile | None:
        """``sender``'s warm-up ramp (None: no warm-up)."""
        name = self.warmup_of.get(sender, self.warmup)
        if name == OFF:
            return None
        return self.profiles.get(name) or WarmupProfile()

    def window_s(self) -> float:
        """The health window, in seconds."""
        return parse_duration(self.health_window)

    def undelivered_s(self) -> float:
        """How long a send may stay undelivered before it counts, in seconds."""
        return parse_duration(self.undelivered_after)


__all__ = ["DEFAULT_RAMP", "OFF", "SenderCare", "WarmupProfile"]
