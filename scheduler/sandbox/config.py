"""Settings of the sandbox: fault injection, simulated recipients, plan limits, clock.

Every knob except ``api_key``, ``seed`` and ``clock`` can be changed while the sandbox runs
(``POST /sandbox/faults``), so a test can start a 429 burst in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
)

DEFAULT_API_KEY = "sandbox-key"


def utc_now() -> datetime:
    """The real time, as an aware UTC datetime (the default sandbox clock)."""
    return datetime.now(UTC)


def parse_range(value: Any) -> Any:
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
        raise ValueError(f"expected MIN-MAX milliseconds such as 5-20, got {value!r}") from None
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

    message_id_case_mismatch: bool = True
    auto_connect: bool = False
    clock: Callable[[], datetime] = Field(default=utc_now, exclude=True)

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
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(problems) from None
