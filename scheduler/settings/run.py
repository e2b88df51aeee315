"""A run's options: what the dispatcher and the program need of a campaign, parsed once.

:class:`RunOptions` is built from the campaign when a run is planned (see
``scheduler.campaign.options``), stored with the run as JSON (``runs.options``, with its
``version``) and read back through this model by the dispatcher and the program; nobody
reads the definition snapshot for them. Every value is already parsed: rates per second,
seconds, minutes after midnight, weekday numbers.

The defaults of these options live here, once: the campaign definition uses them, and so
does :func:`from_snapshot`, which rebuilds the options of a run stored before they were
(an old ledger) from its definition snapshot.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta, tzinfo
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scheduler.core.errors import SchedulerError
from scheduler.core.units import (
    ClockTime,
    UnitError,
    load_zone,
    parse_days,
    parse_duration,
    parse_jitter,
    parse_rate,
    parse_window,
)
from scheduler.settings.conversation import ConversationOptions
from scheduler.settings.retry_rules import RecycleOptions

#: The version of :class:`RunOptions` this program writes and reads.
OPTIONS_VERSION = 1

# The defaults of a campaign's options, as a campaign file writes them.
DEFAULT_RATE = "20/min"
DEFAULT_JITTER = "0"
DEFAULT_TIMEZONE = "America/Sao_Paulo"
DEFAULT_DAYS = "*"
DeliveryMode = Literal["at-most-once", "at-least-once"]
Rotation = Literal["round-robin", "least-used"]
DEFAULT_DELIVERY: DeliveryMode = "at-most-once"
DEFAULT_ROTATION: Rotation = "round-robin"
#: The channels a campaign sends on (``calls``: WhatsApp calls placed through sessions).
Channel = Literal["whatsapp", "sms", "voice", "calls"]
CHANNELS: tuple[Channel, ...] = get_args(Channel)
#: Channels that send through WhatsApp sessions (``senders`` are session ids; events come
#: to the session webhook): messages, and calls placed to a list (``calls``).
SESSION_CHANNELS = frozenset({"whatsapp", "calls"})
#: ``[audience] hold_unengaged_after`` looks back this many days for reads and replies.
UNENGAGED_DAYS = 30


class OptionsError(SchedulerError):
    """A run's stored options cannot be read (written by a newer program, or damaged)."""


class _Frozen(BaseModel):
    # built on first use, not at import (issue 32: every reading command imports these)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class WindowOptions(_Frozen):
    """A daily send window: opens and closes in minutes after local midnight, on weekdays
    (Monday 0). Equal ends mean the whole day; ``closes_min < opens_min`` runs overnight."""

    opens_min: int = Field(ge=0, lt=1440)
    closes_min: int = Field(ge=0, le=1440)
    weekdays: tuple[int, ...]
    #: ``[schedule] holidays``: "BR", "BR-SP" or "recipient" (None: holidays are workdays)
    holidays: str | None = None

    @model_validator(mode="after")
    def _days(self) -> WindowOptions:
        if any(d not in range(7) for d in self.weekdays):
            raise ValueError("weekdays are 0 (Monday) to 6")
        return self


class RunOptions(_Frozen):
    """Pacing, windows, steps and delivery mode of one run, as planned."""

    version: int = OPTIONS_VERSION
    senders: tuple[str, ...]
    rate_per_s: float = Field(gt=0)
    jitter_s: tuple[float, float]
    daily_cap: int | None
    plan_limit: int | None
    timezone: str
    window: WindowOptions | None
    recipient_timezone: bool
    latest_at: datetime | None  # an absolute latest send time (aware) …
    latest_clock_min: int | None  # … or HH:MM on the day the run starts
    delivery_mode: DeliveryMode
    rotation: Rotation
    step_delays_s: tuple[float, ...]
    resend_unproven: bool
    # SMS and voice: recipients per bulk request, and (voice) calls in progress at once.
    # None: the channel's default (stored options from before they existed read as None).
    batch_size: int | None = Field(default=None, ge=1)
    max_calls: int | None = Field(default=None, ge=1)
    # [audience]: per number, counted over every campaign (None: no such rule; stored
    # options from before they existed read as None).
    max_per_day: int | None = Field(default=None, ge=1)
    max_per_week: int | None = Field(default=None, ge=1)
    hold_unengaged_after: int | None = Field(default=None, ge=1)
    # Retry rules per step and [fallback] (None: none; stored options from before they
    # existed read as None: no options version bump).
    recycle: RecycleOptions | None = None
    # Steps that follow replies (their conditions; None: none, as stored before them).
    conversation: ConversationOptions | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RunOptions:
        if self.latest_at is not None and self.latest_clock_min is not None:
            raise ValueError("latest is a time of day or a date-time, not both")
        if self.latest_at is not None and self.latest_at.utcoffset() is None:
            raise ValueError("latest_at must carry its UTC offset")
        load_zone(self.timezone)
        return self

    @property
    def at_least_once(self) -> bool:
        """Whether ambiguous rows are re-sent rather than marked ``unknown``."""
        return self.delivery_mode == "at-least-once"

    @property
    def zone(self) -> tzinfo:
        """The run's time zone."""
        return load_zone(self.timezone)

    def latest_for(self, start: datetime) -> datetime | None:
        """The latest send time of the run when it starts at ``start``: a ``HH:MM`` latest
        is that time on the start's local day, or on the next day when already past."""
        if self.latest_at is not None:
            return self.latest_at
        if self.latest_clock_min is None:
            return None
        zone = self.zone
        local = start.astimezone(zone)
        moment = datetime.combine(local.date(), time(), tzinfo=zone)
        moment += timedelta(minutes=self.latest_clock_min)
        return moment if moment > local else moment + timedelta(days=1)

    def to_json(self) -> str:
        """The stored form (``runs.options``)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str, *, run_id: int | None = None) -> RunOptions:
        """Read the stored form; a newer version or a damaged value is :class:`OptionsError`."""
        label = f"run {run_id}" if run_id is not None else "a run"
        try:
            version = RunOptions.model_validate_json(text).version
        except ValidationError as exc:
            raise OptionsError(f"the stored options of {label} are not readable: "
                               f"{_first(exc)}") from None
        if version != OPTIONS_VERSION:
            raise OptionsError(f"{label} was planned by a program that stores options "
                               f"version {version}; this one reads version "
                               f"{OPTIONS_VERSION}: update campaign")
        return RunOptions.model_validate_json(text)


def _first(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"


def latest_parts(raw: datetime | ClockTime | str | None,
                 zone: tzinfo) -> tuple[datetime | None, int | None]:
    """(latest_at, latest_clock_min) of a definition's ``latest`` (``"HH:MM"`` or a
    date-time, as text or read); a naive date-time is in the campaign's zone."""
    if isinstance(raw, str):
        text = raw
        try:
            raw = ClockTime.parse(text)
        except UnitError:
            try:
                raw = datetime.fromisoformat(text)
            except ValueError:
                raise UnitError(f"latest {text!r}: expected HH:MM or an ISO date-time") from None
    if raw is None:
        return None, None
    if isinstance(raw, ClockTime):
        return None, raw.minutes
    return (raw if raw.utcoffset() is not None else raw.replace(tzinfo=zone)), None


def from_snapshot(snapshot: dict[str, Any]) -> RunOptions:
    """The options of a run stored before options were (no ``runs.options``), from its
    definition snapshot (a ``CampaignSpec`` dumped as JSON). The only reader of that JSON;
    a key the snapshot lacks takes the definition's default."""
    pace = snapshot.get("pace") or {}
    audience = snapshot.get("audience") or {}
    schedule = snapshot.get("schedule") or {}
    timezone = schedule.get("timezone") or DEFAULT_TIMEZONE
    window = None
    if schedule.get("window"):
        opens, closes = parse_window(schedule["window"])
        days = parse_days(schedule.get("days") or DEFAULT_DAYS)
        window = WindowOptions(opens_min=opens, closes_min=closes, weekdays=tuple(sorted(days)))
    latest_at, latest_clock = latest_parts(schedule.get("latest"), load_zone(timezone))
    steps = [s for s in snapshot.get("steps") or [{}] if isinstance(s, dict)] or [{}]
    try:
        return RunOptions(
            senders=tuple(str(s) for s in snapshot.get("senders") or ()),
            rate_per_s=parse_rate(pace.get("rate") or DEFAULT_RATE),
            jitter_s=parse_jitter(pace.get("jitter") or DEFAULT_JITTER),
            daily_cap=pace.get("daily_cap"),
            plan_limit=pace.get("plan_limit"),
            timezone=timezone,
            window=window,
            recipient_timezone=bool(snapshot.get("recipient_timezone")),
            latest_at=latest_at,
            latest_clock_min=latest_clock,
            delivery_mode=snapshot.get("delivery") or DEFAULT_DELIVERY,
            rotation=snapshot.get("sender_rotation") or DEFAULT_ROTATION,
            step_delays_s=tuple(_delay(s.get("delay")) for s in steps),
            resend_unproven=bool(snapshot.get("resend_unproven")),
            batch_size=pace.get("batch"),
            max_calls=pace.get("max_calls"),
            max_per_day=audience.get("max_per_day"),
            max_per_week=audience.get("max_per_week"),
            hold_unengaged_after=audience.get("hold_unengaged_after"),
        )
    except ValidationError as exc:
        raise OptionsError(f"the definition stored with a run is not readable: "
                           f"{_first(exc)}") from None


def _delay(raw: Any) -> float:
    if raw is None:
        return 0.0
    if isinstance(raw, int | float):
        return float(raw)
    return parse_duration(str(raw))
