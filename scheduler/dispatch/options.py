"""Everything the dispatcher needs to know about a run, taken from its definition snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from scheduler.dispatch.pacing import parse_duration, parse_jitter, parse_rate
from scheduler.dispatch.windows import SendWindow, load_zone, parse_clock


@dataclass(frozen=True)
class DispatchOptions:
    """Pacing, windows, retries and delivery mode of one run."""

    senders: tuple[str, ...]
    rate: float = 1.0
    jitter: tuple[float, float] = (0.0, 0.0)
    daily_cap: int | None = None
    timezone: str = "UTC"
    window: SendWindow | None = None
    recipient_timezone: bool = False
    latest: datetime | None = None
    delivery_mode: str = "at-most-once"
    step_delays_s: tuple[float, ...] = (0.0,)
    rotation: str = "round-robin"
    max_attempts: int = 5
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 300.0
    concurrency: int = 64
    verify_grace_s: float = 60.0
    sender_cooloff_s: float = 60.0
    failure_threshold: int = 5
    plan_limit: int | None = None

    @property
    def at_least_once(self) -> bool:
        """Whether ambiguous rows are re-sent rather than marked ``unknown``."""
        return self.delivery_mode == "at-least-once"

    @classmethod
    def from_definition(cls, snapshot: dict[str, Any], *, start: datetime | None = None,
                        **overrides: Any) -> DispatchOptions:
        """Options from the run's stored definition (``CampaignSpec`` dumped as JSON).

        ``latest = "HH:MM"`` means that time on the day the run starts (``start``).
        """
        pace = snapshot.get("pace") or {}
        schedule = snapshot.get("schedule") or {}
        tz = schedule.get("timezone") or snapshot.get("timezone") or "UTC"
        window_text = schedule.get("window") or snapshot.get("window")
        days = schedule.get("days") or snapshot.get("days") or "*"
        window = SendWindow.parse(window_text, days, tz) if window_text else None
        latest_raw = schedule.get("latest") or snapshot.get("latest")
        latest = None
        if latest_raw:
            latest = _resolve_latest(str(latest_raw), tz, start)
        steps = snapshot.get("steps") or [{}]
        delays = tuple(_delay(s.get("delay") if isinstance(s, dict) else None) for s in steps)
        rate_text = pace.get("rate")
        jitter_text = pace.get("jitter")
        values: dict[str, Any] = {
            "senders": tuple(snapshot.get("senders") or ()),
            "rate": parse_rate(rate_text) if rate_text else 1.0,
            "jitter": parse_jitter(jitter_text) if jitter_text else (0.0, 0.0),
            "daily_cap": pace.get("daily_cap"),
            "timezone": tz,
            "window": window,
            "recipient_timezone": bool(schedule.get("recipient_timezone")
                                       or snapshot.get("recipient_timezone")),
            "latest": latest,
            "delivery_mode": snapshot.get("delivery") or snapshot.get("delivery_mode")
            or "at-most-once",
            "step_delays_s": delays or (0.0,),
            "rotation": snapshot.get("sender_rotation") or "round-robin",
            "plan_limit": pace.get("plan_limit") or snapshot.get("plan_limit"),
        }
        values.update(overrides)
        return cls(**values)


def _delay(raw: Any) -> float:
    if raw is None:
        return 0.0
    if isinstance(raw, int | float):
        return float(raw)
    return parse_duration(str(raw))


def _resolve_latest(text: str, tz: str, start: datetime | None) -> datetime:
    """``HH:MM`` on the start's local day (the next day if already past), or an ISO time."""
    zone = load_zone(tz)
    if len(text) <= 5 and ":" in text:
        minutes = parse_clock(text)
        base = (start or datetime.now(zone)).astimezone(zone)
        latest = base.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(
            minutes=minutes)
        if latest <= base:
            latest += timedelta(days=1)
        return latest
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)
