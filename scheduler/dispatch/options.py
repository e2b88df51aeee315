"""What the engine runs with: a run's stored options, resolved for this start and process.

:class:`DispatchOptions` is :class:`scheduler.settings.run.RunOptions` (stored with the run,
already parsed) made ready to use: the send window as a :class:`SendWindow`, the latest
send time on the run's start day, plus this process's
:class:`~scheduler.settings.engine.EngineSettings` (``engine``: grace, bulk and call limits,
SMS prices, tries and back-off, concurrency, a sender's rest), held whole, never copied
field by field, never stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.core.units import parse_jitter, parse_rate
from scheduler.dispatch.windows import SendWindow
from scheduler.settings.engine import EngineSettings
from scheduler.settings.run import (
    DEFAULT_DELIVERY,
    DEFAULT_JITTER,
    DEFAULT_RATE,
    DEFAULT_ROTATION,
    DEFAULT_TIMEZONE,
    DeliveryMode,
    Rotation,
    RunOptions,
)


@dataclass(frozen=True, kw_only=True)
class DispatchOptions:
    """Pacing, windows, retries and delivery mode of one run (the run's defaults are the
    campaign definition's, from :mod:`scheduler.settings.run`), with this process's engine
    settings (``engine``, their defaults written in :class:`EngineSettings`)."""

    senders: tuple[str, ...]
    engine: EngineSettings = field(default_factory=EngineSettings)
    rate: float = parse_rate(DEFAULT_RATE)
    jitter: tuple[float, float] = parse_jitter(DEFAULT_JITTER)
    daily_cap: int | None = None
    timezone: str = DEFAULT_TIMEZONE
    window: SendWindow | None = None
    recipient_timezone: bool = False
    #: ``[schedule] holidays = "recipient"``: each number's state's holidays too
    recipient_holidays: bool = False
    latest: datetime | None = None
    delivery_mode: DeliveryMode = DEFAULT_DELIVERY
    step_delays_s: tuple[float, ...] = (0.0,)
    rotation: Rotation = DEFAULT_ROTATION
    plan_limit: int | None = None
    #: SMS / voice: recipients per bulk request; None = the channel's default.
    batch_size: int | None = None
    #: voice: calls in progress at once (the campaign's ``max_calls``); None = the channel's.
    max_calls: int | None = None
    #: [audience]: the most messages per number per local day and per 7 days, counted over
    #: every campaign, and the hold on numbers that never read nor reply (None: no rule).
    max_per_day: int | None = None
    max_per_week: int | None = None
    hold_unengaged_after: int | None = None

    @property
    def at_least_once(self) -> bool:
        """Whether ambiguous rows are re-sent rather than marked ``unknown``."""
        return self.delivery_mode == "at-least-once"

    @classmethod
    def for_run(cls, stored: RunOptions, *, start: datetime,
                **overrides: Any) -> DispatchOptions:
        """The options of a run stored with ``stored``, starting (or started) at ``start``;
        ``overrides`` are this process's (``engine``: ``Settings.engine``)."""
        values: dict[str, Any] = {
            "senders": stored.senders,
            "rate": stored.rate_per_s,
            "jitter": stored.jitter_s,
            "daily_cap": stored.daily_cap,
            "timezone": stored.timezone,
            "window": SendWindow.of(stored.window, stored.timezone),
            "recipient_timezone": stored.recipient_timezone,
            "recipient_holidays": stored.window is not None
            and stored.window.holidays == "recipient",
            "latest": stored.latest_for(start),
            "delivery_mode": stored.delivery_mode,
            "step_delays_s": stored.step_delays_s or (0.0,),
            "rotation": stored.rotation,
            "plan_limit": stored.plan_limit,
            "batch_size": stored.batch_size,
            "max_calls": stored.max_calls,
            "max_per_day": stored.max_per_day,
            "max_per_week": stored.max_per_week,
            "hold_unengaged_after": stored.hold_unengaged_after,
        }
        values.update(overrides)
        return cls(**values)
