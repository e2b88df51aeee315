"""The campaign definition file (TOML) as pydantic models.

Example (every key is documented in ``campaigns/demo.toml``)::

    name = "Boas-vindas"
    channel = "whatsapp"                 # whatsapp | sms | voice | calls (WhatsApp calls)
    senders = ["loja-01", "loja-02"]     # session ids (WhatsApp); the account for SMS/voice
    labels = ["vip"]                     # WhatsApp: only chats with one of these labels
    exclude_labels = ["churned"]         # WhatsApp: never chats with one of these labels
    delivery = "at-most-once"            # or "at-least-once"
    sender_rotation = "round-robin"      # or "least-used"
    recipient_timezone = false           # windows in each recipient's own time zone

    [recipients]
    file = "data/clientes.csv"           # relative to the project root (see loader)
    phone_column = "telefone"
    default_country = "BR"
    suppression = ["data/optout.txt"]
    line_types = ["mobile"]              # default: mobile (WhatsApp, SMS); + fixed_line (voice)
    add_ninth_digit = false              # complete Brazilian mobiles missing the ninth digit
    max_invalid = "2%"                   # or a count; more unreachable numbers fail the run
    opt_out_digit = "9"                  # voice: a key that, pressed in the IVR, opts out

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
    batch = 100                          # SMS / voice: recipients per bulk request
    max_calls = 10                       # voice: calls in progress at once

    [blanks]                             # a blank CSV value: error, skip, keep, a default
    default = "keep"                     # the columns templates name (see blanks)
    vencimento = "skip"

    [bounds]                             # (ours) longest rendered text and caption
    text = 4096
    caption = 1024

    [[steps]]
    type = "text"
    text_file = "welcome.txt.j2"         # or text = "Olá {{ nome|first_name }}!"

    [[steps]]
    type = "image"
    delay = "10m"                        # after the previous step
    image = "https://example.com/welcome.jpg"
    caption = "Bem-vindo(a), {{ nome|first_name }}"

Step fields are checked against the endpoint's model by :mod:`scheduler.campaign.steps`;
second chances (a step's ``retry`` and ``min_talk``, ``[fallback]``) are described in
:mod:`scheduler.campaign.recycle_spec`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import phonenumbers
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from scheduler.campaign.audience_spec import AudienceSpec
from scheduler.campaign.blanks_spec import BlanksSpec
from scheduler.campaign.consent import CONSENT_COLUMN_HELP, CONSENT_HELP, ConsentMode
from scheduler.campaign.conversation_spec import RepliesSpec
from scheduler.campaign.experiment_spec import EXPERIMENT_HELP, ExperimentSpec
from scheduler.campaign.holidays import HOLIDAYS_HELP, HolidayCode, holidays_problem
from scheduler.campaign.invalid_share import PERCENT
from scheduler.campaign.linetypes import LineTypeName
from scheduler.campaign.recycle_spec import FALLBACK_HELP, FallbackSpec
from scheduler.campaign.render_bounds import RenderLimits
from scheduler.core.channel_terms import terms_of
from scheduler.core.units import ClockTime, ClockWindow, Days, Jitter, Rate, load_zone
from scheduler.settings.run import (
    DEFAULT_DAYS,
    DEFAULT_DELIVERY,
    DEFAULT_JITTER,
    DEFAULT_RATE,
    DEFAULT_ROTATION,
    DEFAULT_TIMEZONE,
    SESSION_CHANNELS,
    Channel,
    DeliveryMode,
    Rotation,
)

NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]


class Strict(BaseModel):
    """Base of the definition models: unknown keys are errors (a typo must not pass)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def lenient(info: ValidationInfo) -> bool:
    """Whether cross-key checks are off: ``campaign validate`` builds a best-effort
    definition (with ``context={"lenient": True}``) to go on checking rows and templates
    after reporting the definition's errors."""
    return bool(info.context and info.context.get("lenient"))


#: A TOML date-time as a JSON Schema sees it: a string (an editor's TOML support turns TOML
#: dates into strings; a local one, without an offset, is read in ``schedule.timezone``).
_DATE_TIME_TEXT = {"type": "string", "examples": ["2027-03-08T09:00:00"]}

class RecipientsSpec(Strict):
    """``[recipients]``: the CSV, its phone column, the default country, opt-out lists."""

    file: NonEmpty = Field(description=(
        "The CSV of recipients (any encoding and delimiter), relative to the project folder "
        "(the one above `campaigns/`) or absolute."))
    phone_column: NonEmpty | None = Field(default=None, description=(
        "The column of the numbers, as its header is written or as its variable name; "
        "unset: the first of phone, telefone, celular, whatsapp, numero, …"))
    default_country: str = Field(default="BR", description=(
        "The region of numbers written without a country code (two letters)."))
    suppression: list[NonEmpty] = Field(default_factory=list, description=(
        "Files of numbers never sent to (opt-out lists): one number a line, or a CSV's "
        "phone column."))
    line_types: list[LineTypeName] | None = Field(default=None, min_length=1, description=(
        "The kinds of number sent to; unset: mobile (WhatsApp, SMS), mobile and fixed_line "
        "(voice). Other numbers are skipped with their reason."))
    add_ninth_digit: bool = Field(default=False, description=(
        "Send a Brazilian mobile missing its ninth digit to the number with it "
        "(11 8765-4321 to 11 98765-4321) instead of skipping it."))
    max_invalid: int | str | None = Field(default=None, description=(
        'How many unreachable numbers are tolerated: a count (20) or a share of the rows '
        'read ("2%"); more make validate, plan and run fail. Unset: any number.'))
    consent: ConsentMode | None = Field(default=None, description=CONSENT_HELP)
    consent_column: NonEmpty | None = Field(default=None, description=CONSENT_COLUMN_HELP)
    opt_out_digit: str | None = Field(default=None, description=(
        "Voice: the IVR key (0-9, * or #) that, pressed, puts the number on the shared "
        "suppression list."))

    @field_validator("opt_out_digit", mode="before")
    @classmethod
    def _opt_out_digit(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 9:
            value = str(value)
        if value is not None and (not isinstance(value, str) or value not in list("0123456789*#")):
            raise ValueError(f"{value!r}: expected one phone key: 0-9, * or #")
        return value

    @field_validator("max_invalid")
    @classmethod
    def _max_invalid(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, bool):
            raise ValueError('expected a count such as 20 or a share such as "2%"')
        if isinstance(value, int):
            if value < 0:
                raise ValueError("must not be negative")
            return value
        if isinstance(value, str):
            found = PERCENT.match(value)
            if found is None or float(found.group(1)) > 100:
                raise ValueError(f'{value!r}: expected a count such as 20 or a share such as "2%"')
        return value

    @field_validator("default_country")
    @classmethod
    def _region(cls, value: str) -> str:
        region = value.strip().upper()
        if region not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(f"{value!r} is not a two-letter region code phonenumbers knows")
        return region


class ScheduleSpec(Strict):
    """``[schedule]``: a one-off time or a cron line, the zone, the window and days."""

    at: Annotated[datetime | None, WithJsonSchema(_DATE_TIME_TEXT)] = Field(
        default=None, description=(
            "A one-off start: a date-time, in `timezone` unless it has an offset; a past one "
            "is an error. Unset (and no `cron`): the run starts when `campaign run` does."))
    cron: str | None = Field(default=None, description=(
        'A repeating start, as a crontab line ("0 9 * * mon-fri"), fired by '
        "`campaign serve` once `campaign schedule` registered the file."))
    timezone: str = Field(default=DEFAULT_TIMEZONE, description=(
        "The IANA time zone of `at`, `window`, `days`, `latest` and of every time shown."))
    window: ClockWindow | None = Field(default=None, description=(
        'The daily hours when sends go out ("HH:MM-HH:MM", may run overnight); unset: '
        "all day."))
    days: Days = Field(default=Days.parse(DEFAULT_DAYS), description=(
        'The weekdays when sends go out ("mon-sat", "mon,wed,fri"; "*": every day).'))
    latest: Annotated[datetime | ClockTime | None, WithJsonSchema(
        {"anyOf": [{"type": "string", "examples": ["20:00", "2027-03-08T20:00:00"]},
                   {"type": "null"}]})] = Field(default=None, description=(
        'What is not sent by then expires: "HH:MM" on the run\'s day, or a date-time.'))
    holidays: HolidayCode | None = Field(default=None, description=HOLIDAYS_HELP)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        load_zone(value)
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

    @field_validator("latest", mode="before")
    @classmethod
    def _latest(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return ClockTime.parse(value)
            except ValueError:
                try:
                    return datetime.fromisoformat(value)
                except ValueError:
                    raise ValueError(
                        f"{value!r}: expected HH:MM (on the run's day) or an ISO date-time"
                    ) from None
        return value

    @model_validator(mode="after")
    def _one_trigger(self, info: ValidationInfo) -> ScheduleSpec:
        """A campaign has a one-off time or a cron line, not both."""
        if self.at is not None and self.cron is not None and not lenient(info):
            raise ValueError("give either at (one-off) or cron (repeating), not both")
        return self


class PaceSpec(Strict):
    """``[pace]``: per-sender rate, jitter, daily cap, plan limit when no service says it."""

    rate: Rate = Field(default=Rate.parse(DEFAULT_RATE), description=(
        'Sends per sender ("N/s", "N/min", "N/h"); for SMS and voice, the account\'s '
        "for the whole run, a bulk request of n recipients spending n."))
    jitter: Jitter = Field(default=Jitter.parse(DEFAULT_JITTER), description=(
        'A random pause after each send, "low-high" ("2s-8s"); "0": none.'))
    daily_cap: int | None = Field(default=None, ge=1, description=(
        "The most sends per sender (SMS and voice: the account's) per local day, "
        "counted across campaigns."))
    plan_limit: int | None = Field(default=None, ge=0, description=(
        "The most sends per sender per day when no service states its plan's limit."))
    batch: int | None = Field(default=None, ge=1, le=1000, description=(
        "SMS and voice: recipients per bulk request (unset: SMS 100, voice 10; never over "
        "the `bulk_max` setting nor, for voice, `max_calls`)."))
    max_calls: int | None = Field(default=None, ge=1, le=1000, description=(
        "Voice: calls in progress at once (unset: the `voice_max_calls` setting, which also "
        "bounds it)."))


class BoundsSpec(Strict):
    """``[bounds]`` **(ours)**: the longest rendered text and caption a step may send.

    The service documents no maximum; these are WhatsApp's limits for a text message and a
    media caption. A rendered body over them is an error of its row, found before sending.
    ``render_max_*`` bound the cost of rendering one template for one row.
    """

    text: int = Field(default=4096, ge=1, description=(
        "The longest rendered text, in characters (WhatsApp's limit)."))
    caption: int = Field(default=1024, ge=1, description=(
        "The longest rendered media caption, in characters (WhatsApp's limit)."))
    # What one template may cost per row (scheduler.campaign.render_bounds): output bytes,
    # loop iterations, nested calls, milliseconds. A breach is an error of its row.
    render_max_bytes: int = Field(default=1_000_000, ge=1, description=(
        "The most output (UTF-8 bytes) one template may produce for one row, counted as it "
        "is produced."))
    render_max_loops: int = Field(default=100_000, ge=1, description=(
        "The most loop steps one template may take for one row (every loop, nested ones "
        "too), and the longest list it may build."))
    render_max_depth: int = Field(default=50, ge=1, le=200, description=(
        "The deepest nesting of calls (a macro calling itself) in one template."))
    render_max_ms: int = Field(default=2_000, ge=1, description=(
        "The most milliseconds one template may take for one row."))

    def render_limits(self) -> RenderLimits:
        """These bounds as the renderer takes them."""
        return RenderLimits(max_bytes=self.render_max_bytes, max_loops=self.render_max_loops,
                            max_depth=self.render_max_depth, max_ms=self.render_max_ms)


class CampaignSpec(Strict):
    """The whole definition file. ``steps`` are tables whose fields depend on the channel
    and the step's type (the Steps reference)."""

    name: NonEmpty = Field(description=(
        "The campaign's name: its runs, reports and schedule are known by it."))
    description: str | None = Field(default=None, description="A note for people; never sent.")
    channel: Channel = Field(default="whatsapp", description=(
        "whatsapp (messages through sessions), sms, voice (the account's calls and IVR "
        "flows) or calls (WhatsApp calls placed through sessions)."))
    senders: list[NonEmpty] = Field(default_factory=list, description=(
        "WhatsApp and calls: the session ids that send, in rotation. SMS and voice send "
        "from the account: none."))
    delivery: DeliveryMode = Field(default=DEFAULT_DELIVERY, description=(
        "at-most-once: a send in doubt is never sent again by itself; at-least-once: it "
        "is, which may reach someone twice."))
    sender_rotation: Rotation = Field(default=DEFAULT_ROTATION, description=(
        "How recipients are spread over the senders."))
    recipient_timezone: bool = Field(default=False, description=(
        "Keep the window and days in each recipient's own time zone (from the number) "
        "rather than the campaign's."))
    # Re-send, by itself, an `unknown` send the service did not take (no proof within its
    # webhook retry horizon while a receiver listened without a break); see
    # scheduler.dispatch.unknowns.
    resend_unproven: bool = Field(default=False, description=(
        "Send again, by itself, an unknown send the service did not take (no proof while a "
        "receiver listened without a break through its whole retry horizon): what "
        "`campaign resend RUN --unproven` does."))
    # WhatsApp: label names (any case) of the senders' chats to target and to leave out,
    # resolved at plan time from the ledger's label state (scheduler.campaign.label_filter).
    labels: list[NonEmpty] = Field(default_factory=list, description=(
        "WhatsApp: only recipients whose chat carries one of these labels (any case) on "
        "the campaign's sender sessions."))
    exclude_labels: list[NonEmpty] = Field(default_factory=list, description=(
        "WhatsApp: never recipients whose chat carries one of these labels."))
    recipients: RecipientsSpec = Field(description=(
        "Who receives it: the CSV, its phone column, the opt-out lists."))
    schedule: ScheduleSpec = Field(default_factory=ScheduleSpec, description=(
        "When it starts and the hours and days it sends in."))
    pace: PaceSpec = Field(default_factory=PaceSpec, description=(
        "How fast each sender sends, and its daily cap."))
    bounds: BoundsSpec = Field(default_factory=BoundsSpec, description=(
        "The longest rendered texts, and what one template may cost per row."))
    audience: AudienceSpec = Field(default_factory=AudienceSpec, description=(
        "How often one number may be sent to, counting every campaign's sends to it."))
    track_links: bool = Field(default=True, description="link() makes click-counting short links.")
    #: what a blank CSV value does, per column (scheduler.campaign.blanks)
    blanks: BlanksSpec = Field(default_factory=BlanksSpec, description=(
        "What a blank CSV value does, per column."))
    experiment: ExperimentSpec | None = Field(default=None, description=EXPERIMENT_HELP)
    fallback: FallbackSpec | None = Field(default=None, description=FALLBACK_HELP)
    replies: RepliesSpec | None = Field(default=None, description=(
        "Steps that follow replies: the expected reply rate, how long a condition waits, "
        "keywords that route a reply to a named step."))
    steps: list[dict[str, Any]] = Field(min_length=1, description=(
        "What each recipient is sent, in order: one [[steps]] table each, its fields those "
        "of its channel and type."))

    @field_validator("senders")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        seen = [s for i, s in enumerate(value) if s in value[:i]]
        if seen:
            raise ValueError(f"sender {seen[0]!r} is listed twice")
        return value

    @model_validator(mode="after")
    def _whatsapp_senders(self, info: ValidationInfo) -> CampaignSpec:
        """WhatsApp sends through sessions: at least one is needed."""
        problem = self.whole_file_problem()
        if problem is not None and not lenient(info):
            raise ValueError(f"{problem[0]}: {problem[1]}")
        return self

    def whole_file_problem(self) -> tuple[str, str] | None:
        """(key, message) of the check across keys, which pydantic skips when another key
        is wrong (``campaign validate`` asks for it on the best-effort definition)."""
        if self.channel in SESSION_CHANNELS and not self.senders:
            return "senders", "a WhatsApp campaign needs at least one session id"
        if self.recipients.opt_out_digit is not None and not terms_of(self.channel).keys:
            return "recipients.opt_out_digit", "only a voice campaign's IVR has keys to press"
        for key in ("labels", "exclude_labels"):
            if getattr(self, key) and self.channel not in SESSION_CHANNELS:
                return key, (f"labels are on the chats of WhatsApp sessions; a {self.channel} "
                             "campaign sends from the account, which has none")
        both = {n.casefold() for n in self.labels} & {n.casefold() for n in self.exclude_labels}
        if both:
            return "exclude_labels", f"{sorted(both)[0]!r} is in labels too"
        return holidays_problem(self.schedule.holidays, self.channel)

