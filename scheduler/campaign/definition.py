"""The campaign definition file (TOML) as pydantic models.

Example (every key is documented in ``campaigns/demo.toml``)::

    name = "Boas-vindas"
    channel = "whatsapp"                 # whatsapp | sms | voice
    senders = ["loja-01", "loja-02"]     # session ids (WhatsApp); the account for SMS/voice
    delivery = "at-most-once"            # or "at-least-once"
    sender_rotation = "round-robin"      # or "least-used"
    recipient_timezone = false           # windows in each recipient's own time zone

    [recipients]
    file = "data/clientes.csv"           # relative to the project root (see loader)
    phone_column = "telefone"
    default_country = "BR"
    suppression = ["data/optout.txt"]

    [schedule]
    at = 2025-03-10T09:00:00             # or cron = "0 9 * * mon-fri"
    timezone = "America/Sao_Paulo"
    window = "09:00-20:00"
    days = "mon-sat"
    latest = "20:00"                     # HH:MM of the run's day, or a date-time

    [pace]
    rate = "30/min"                      # per sender
    jitter = "2s-8s"
    daily_cap = 1000                     # per sender per local day
    plan_limit = 5000                    # per sender per day, when no service is configured

    [[steps]]
    type = "text"
    text_file = "welcome.txt.j2"         # or text = "Olá {{ nome|first_name }}!"

    [[steps]]
    type = "image"
    delay = "10m"                        # after the previous step
    image = "https://example.com/welcome.jpg"
    caption = "Bem-vindo(a), {{ nome|first_name }}"

Step fields are checked against the endpoint's model by :mod:`scheduler.campaign.steps`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import phonenumbers
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from scheduler.dispatch.pacing import parse_duration, parse_jitter, parse_rate
from scheduler.dispatch.windows import load_zone, parse_clock, parse_days, parse_window

NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]
Channel = Literal["whatsapp", "sms", "voice"]


class Strict(BaseModel):
    """Base of the definition models: unknown keys are errors (a typo must not pass)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RecipientsSpec(Strict):
    """``[recipients]``: the CSV, its phone column, the default country, opt-out lists."""

    file: NonEmpty
    phone_column: NonEmpty | None = None  # None: the first of phone, telefone, celular, …
    default_country: str = "BR"
    suppression: list[NonEmpty] = Field(default_factory=list)

    @field_validator("default_country")
    @classmethod
    def _region(cls, value: str) -> str:
        region = value.strip().upper()
        if region not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(f"{value!r} is not a two-letter region code phonenumbers knows")
        return region


class ScheduleSpec(Strict):
    """``[schedule]``: a one-off time or a cron line, the zone, the window and days."""

    at: datetime | None = None
    cron: str | None = None
    timezone: str = "America/Sao_Paulo"
    window: str | None = None
    days: str = "*"
    latest: datetime | str | None = None

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        load_zone(value)
        return value

    @field_validator("window")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is not None:
            parse_window(value)
        return value

    @field_validator("days")
    @classmethod
    def _days(cls, value: str) -> str:
        parse_days(value)
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            from apscheduler.triggers.cron import CronTrigger

            try:
                CronTrigger.from_crontab(value, timezone="UTC")
            except ValueError as exc:
                raise ValueError(f"cron {value!r}: {exc}") from None
        return value

    @field_validator("latest")
    @classmethod
    def _latest(cls, value: datetime | str | None) -> datetime | str | None:
        if isinstance(value, str):
            try:
                parse_clock(value)
            except ValueError:
                try:
                    return datetime.fromisoformat(value)
                except ValueError:
                    raise ValueError(
                        f"{value!r}: expected HH:MM (on the run's day) or an ISO date-time"
                    ) from None
        return value

    @model_validator(mode="after")
    def _one_trigger(self) -> ScheduleSpec:
        """A campaign has a one-off time or a cron line, not both."""
        if self.at is not None and self.cron is not None:
            raise ValueError("give either at (one-off) or cron (repeating), not both")
        return self


class PaceSpec(Strict):
    """``[pace]``: per-sender rate, jitter, daily cap, plan limit when no service says it."""

    rate: str = "20/min"
    jitter: str = "0"
    daily_cap: int | None = Field(default=None, ge=1)
    plan_limit: int | None = Field(default=None, ge=0)

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        parse_rate(value)
        return value

    @field_validator("jitter")
    @classmethod
    def _jitter(cls, value: str) -> str:
        parse_jitter(value)
        return value

    @property
    def rate_per_s(self) -> float:
        """Sends per second per sender."""
        return parse_rate(self.rate)

    @property
    def jitter_s(self) -> tuple[float, float]:
        """Jitter bounds in seconds."""
        return parse_jitter(self.jitter)


class CampaignSpec(Strict):
    """The whole definition file. ``steps`` are raw tables, checked per channel later."""

    name: NonEmpty
    description: str | None = None
    channel: Channel = "whatsapp"
    senders: list[NonEmpty] = Field(default_factory=list)
    delivery: Literal["at-most-once", "at-least-once"] = "at-most-once"
    sender_rotation: Literal["round-robin", "least-used"] = "round-robin"
    recipient_timezone: bool = False
    recipients: RecipientsSpec
    schedule: ScheduleSpec = Field(default_factory=ScheduleSpec)
    pace: PaceSpec = Field(default_factory=PaceSpec)
    steps: list[dict[str, Any]] = Field(min_length=1)

    @field_validator("senders")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        seen = [s for i, s in enumerate(value) if s in value[:i]]
        if seen:
            raise ValueError(f"sender {seen[0]!r} is listed twice")
        return value

    @model_validator(mode="after")
    def _whatsapp_senders(self) -> CampaignSpec:
        """WhatsApp sends through sessions: at least one is needed."""
        if self.channel == "whatsapp" and not self.senders:
            raise ValueError("senders: a WhatsApp campaign needs at least one session id")
        return self


def step_delay(raw: Any) -> float:
    """Seconds of a step's ``delay`` (a duration string or a number of seconds)."""
    if isinstance(raw, bool):
        raise ValueError("delay must be a duration such as '10m' or a number of seconds")
    if isinstance(raw, int | float):
        if raw < 0:
            raise ValueError("delay must not be negative")
        return float(raw)
    if isinstance(raw, str):
        return parse_duration(raw)
    raise ValueError("delay must be a duration such as '10m' or a number of seconds")
