"""Settings of the sandbox: fault injection, simulated recipients, plan limits, SMS and
voice outcomes (drawn, or scripted per number), the account's wallet, per-session trouble,
clock.

Every knob except ``api_key``, ``seed`` and ``clock`` can be changed while the sandbox runs
(``POST /sandbox/faults``), so a test can start a 429 burst in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)

from scheduler.core.timeutil import utcnow
from scheduler.sandbox.scripted import Numbers, ReplyScripts, SmsScripts, VoiceScripts
from scheduler.sandbox.trouble_rules import LogoutRules, NeverDeliveredShares, StormRules

DEFAULT_API_KEY = "sandbox-key"
#: An ``errorCode`` of ``sms.undelivered`` / ``sms.failed`` (``docs/service-facts.md``).
SmsErrorCode = Literal[
    "NETWORK_ERROR", "INVALID_NUMBER", "LANDLINE", "BLACKLIST", "CANCELED", "NO_WHATSAPP",
    "CONTENT_BLOCKED", "NO_COVERAGE", "REJECTED", "NOT_RECEIVED",
]
SMS_ERROR_CODES: tuple[SmsErrorCode, ...] = get_args(SmsErrorCode)
#: Q.850 causes of a call nobody answered: busy, no answer, rejected, ring time-out, voicemail.
UnansweredCause = Literal[17, 19, 21, 150, 151]
UNANSWERED_CAUSES: tuple[UnansweredCause, ...] = get_args(UnansweredCause)
SmsRoute = Literal["marketing", "otp"]
#: Price of one SMS segment by route, in micro-reais (ours).
SMS_PRICES_MICRO: dict[SmsRoute, int] = {"marketing": 60_000, "otp": 90_000}


def _with_every_route(prices: dict[SmsRoute, int]) -> dict[SmsRoute, int]:
    """A price table that names one route keeps the default price of the other."""
    if any(price < 0 for price in prices.values()):
        raise ValueError("a price per segment must be >= 0")
    return {**SMS_PRICES_MICRO, **prices}


def parse_range(value: Any, unit: str = "milliseconds") -> Any:
    """``"5-20"``, ``"7"``, ``[5, 20]`` or ``(5, 20)`` → ``(5.0, 20.0)``; other values pass."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (float(value), float(value))
    if not isinstance(value, str):
        return value
    text = value.strip()
    low, sep, high = text.partition("-")
    try:
        first = float(low)
        second = float(high) if sep else first
    except ValueError:
        raise ValueError(f"expected MIN-MAX {unit} such as 5-20, got {value!r}") from None
    return (first, second)


def _ordered(value: tuple[float, float]) -> tuple[float, float]:
    low, high = value
    if low < 0 or high < low:
        raise ValueError(f"expected 0 <= min <= max, got {low:g}-{high:g}")
    return value


#: A probability between 0 and 1.
Rate = Annotated[float, Field(ge=0.0, le=1.0)]
#: A ``(min, max)`` range in milliseconds; also accepts ``"min-max"``.
MsRange = Annotated[tuple[float, float], BeforeValidator(parse_range), AfterValidator(_ordered)]
#: A ``(min, max)`` range in (simulated) seconds; also accepts ``"min-max"``.
SecondsRange = Annotated[
    tuple[float, float],
    BeforeValidator(lambda value: parse_range(value, "seconds")),
    AfterValidator(_ordered),
]


class SandboxConfig(BaseModel):
    """Everything the sandbox can be told: key, seed, faults, recipients, limits, clock."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    api_key: SecretStr = SecretStr(DEFAULT_API_KEY)
    seed: int | None = None
    plan: str = "sandbox"

    # Request faults (sends only; latency applies to every /api/v1 request).
    latency_ms: MsRange = (0.0, 0.0)
    fail_rate: Rate = 0.0
    timeout_rate: Rate = 0.0
    timeout_hang_s: float = Field(default=30.0, ge=0)
    timeout_after_accept: Rate = 0.5
    throttle_rate: Rate = 0.0
    throttle_retry_after_s: int = Field(default=1, ge=0)

    # Plan limits, per session and per day of the sandbox clock (UTC).
    daily_message_limit: int = Field(default=100_000, ge=0)
    daily_sms_limit: int = Field(default=10_000, ge=0)
    daily_voice_limit: int = Field(default=1_000, ge=0)

    # Simulated recipients. read_rate applies to delivered messages, opt_out_rate to replies.
    delivered_rate: Rate = 0.95
    read_rate: Rate = 0.6
    reply_rate: Rate = 0.05
    # A/B variants: a message whose text or caption contains a marker (the first found, in
    # the order given) is replied to at that marker's rate instead of reply_rate.
    reply_rate_by_marker: dict[str, Rate] = Field(default_factory=dict)
    opt_out_rate: Rate = 0.2
    poll_vote_rate: Rate = 0.5
    recipient_delay_ms: MsRange = (20.0, 200.0)

    # Webhook delivery and its faults (the real service: 7 tries, 5..160 s back-off).
    webhook_duplicate_rate: Rate = 0.0
    webhook_delay_ms: MsRange = (0.0, 0.0)
    webhook_reorder: bool = False
    webhook_reorder_hold_ms: float = Field(default=250.0, ge=0)
    webhook_max_attempts: int = Field(default=7, ge=1, le=20)
    webhook_retry_base_s: float = Field(default=0.05, ge=0)
    webhook_timeout_s: float = Field(default=5.0, gt=0)
    webhook_concurrency: int = Field(default=8, ge=1, le=256)

    # SMS (account channel): one outcome per message, drawn in arrival order (delivered is
    # the rest); cost = segments x the route's price per segment, in micro-reais.
    sms_undelivered_rate: Rate = 0.04
    sms_failed_rate: Rate = 0.01
    sms_expired_rate: Rate = 0.01
    sms_error_codes: list[SmsErrorCode] = Field(default=list(SMS_ERROR_CODES), min_length=1)
    sms_price_micro: Annotated[dict[SmsRoute, int], AfterValidator(_with_every_route)] = Field(
        default_factory=lambda: dict(SMS_PRICES_MICRO)
    )
    sms_report_delay_ms: MsRange = (20.0, 200.0)
    sms_bulk_max: int = Field(default=1_000, ge=1)

    # Automated voice calls. Durations are simulated seconds; voice_time_scale turns them
    # into wall time (0.008: a 40 s call takes 0.32 s).
    voice_answer_rate: Rate = 0.7
    voice_ring_s: SecondsRange = (2.0, 12.0)
    voice_talk_s: SecondsRange = (5.0, 30.0)
    voice_digits: str = Field(default="129", pattern=r"^[0-9*#]*$")
    voice_unanswered_causes: list[UnansweredCause] = Field(
        default=list(UNANSWERED_CAUSES), min_length=1
    )
    voice_retry_gap_s: float = Field(default=20.0, ge=0)
    voice_time_scale: float = Field(default=0.008, gt=0)
    voice_max_calls_in_progress: int = Field(default=30, ge=1)
    voice_bulk_max: int = Field(default=1_000, ge=1)
    voice_reserve_micro: int = Field(default=200_000, ge=0)
    voice_price_micro_per_minute: int = Field(default=100_000, ge=0)

    # Asynchronous commands (catalog/product/get with async: true): queued, then running,
    # then done or failed (drawn per command), in seconds of the sandbox clock.
    command_queued_s: SecondsRange = (0.2, 0.5)
    command_running_s: SecondsRange = (0.3, 1.0)
    command_fail_rate: Rate = 0.0

    # The account's wallet in micro-reais (None: unlimited). Setting it sets the balance.
    wallet_micro_reais: int | None = Field(default=None, ge=0)

    # Per-session trouble, keyed by session id ("*": every other session); see
    # scheduler/sandbox/trouble_rules.py and the README's "Senders in trouble".
    rate_limit_storm: StormRules = Field(default_factory=dict)
    logout_after: LogoutRules = Field(default_factory=dict)
    never_delivered: NeverDeliveredShares = Field(default_factory=dict)

    # Scripted outcomes per number, for tests (scheduler/sandbox/scripted.py): each call or
    # SMS to a listed number takes its next entry instead of a draw; WhatsApp messages to
    # a listed number are never delivered.
    voice_outcomes_by_number: VoiceScripts = Field(default_factory=dict)
    sms_outcomes_by_number: SmsScripts = Field(default_factory=dict)
    whatsapp_undelivered_numbers: Numbers = Field(default_factory=list)
    # Scripted WhatsApp replies per number: a reply (or none) per message, in order.
    whatsapp_replies_by_number: ReplyScripts = Field(default_factory=dict)

    message_id_case_mismatch: bool = True
    auto_connect: bool = False
    # connection.status / .qrcode / .paircode on create, scan, disconnect and logout.
    session_status_events: bool = True
    clock: Callable[[], datetime] = Field(default=utcnow, exclude=True)

    @model_validator(mode="after")
    def _sms_rates(self) -> Self:
        """The SMS outcome rates leave room for ``delivered`` (they sum to at most 1)."""
        total = self.sms_undelivered_rate + self.sms_failed_rate + self.sms_expired_rate
        if total > 1.0 + 1e-9:
            raise ValueError(
                f"sms_undelivered_rate + sms_failed_rate + sms_expired_rate is {total:g}, "
                "more than 1"
            )
        return self

    def knobs(self) -> dict[str, Any]:
        """The run-time changeable settings, as JSON-ready values."""
        return self.model_dump(mode="json", include=set(KNOBS))


#: Settings that ``POST /sandbox/faults`` may change while the sandbox runs.
KNOBS: tuple[str, ...] = tuple(
    name for name in SandboxConfig.model_fields if name not in {"api_key", "seed", "clock"}
)


def updated_config(config: SandboxConfig, update: dict[str, Any]) -> SandboxConfig:
    """A new config with ``update`` applied; raises ``ValueError`` naming any bad field."""
    unknown = sorted(set(update) - set(KNOBS))
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)}: not a run-time setting (allowed: {', '.join(KNOBS)})"
        )
    values = config.model_dump(exclude={"clock"})
    values.update(update)
    try:
        return SandboxConfig(**values, clock=config.clock)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ValueError(problems) from None
