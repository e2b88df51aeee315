"""The engine's settings of this process (``config.toml`` / ``CAMPAIGN_*``), written once.

Flat keys of ``config.toml`` (``verify_grace_s = 30``) and ``CAMPAIGN_VERIFY_GRACE_S``,
held as ``Settings.engine`` and handed whole to a run's
:class:`~scheduler.dispatch.options.DispatchOptions` (``options.engine``); never stored with
a run. The service documents none of the SMS and voice values: they are ours, and every one
can be changed.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

#: How long the service keeps retrying a webhook it could not deliver (docs/service-facts.md: 7
#: tries, 5 to 160 s apart, about 315 s), with a margin: an unknown send is judged once this
#: has passed (:mod:`scheduler.dispatch.unknowns`).
WEBHOOK_RETRY_HORIZON_S = 360.0
#: A sender rests this long after this many retryable failures in a row (also the
#: defaults of :class:`scheduler.dispatch.senders.SenderPool`).
SENDER_COOLOFF_S = 60.0
SENDER_FAILURE_THRESHOLD = 5


class EngineSettings(BaseModel):
    """This process's settings of the engine (see ``config.example.toml`` for each)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: How long an ambiguous send waits for its proof event before it is verified.
    verify_grace_s: float = Field(default=60.0, ge=0)
    #: How long the service retries a webhook; shorter only for a stand-in that retries
    #: faster.
    webhook_retry_horizon_s: float = Field(default=WEBHOOK_RETRY_HORIZON_S, gt=0)
    #: Price per SMS segment by route, in micro-reais, to estimate and record each cost.
    sms_price_micro: dict[str, int] = Field(
        default_factory=lambda: {"marketing": 50_000, "otp": 70_000})
    #: The most recipients the service takes in one bulk request.
    bulk_max: int = Field(default=1000, ge=1)
    #: Calls the account may have in progress at once (a campaign's max_calls is bounded).
    voice_max_calls: int = Field(default=30, ge=1)
    #: A call with no ``call.ended`` after this long no longer counts as in progress.
    voice_call_timeout_s: float = Field(default=600.0, gt=0)
    #: How long a call is taken to last where no ``call.ended`` can come (no receiver,
    #: rehearsal).
    voice_call_estimate_s: float = Field(default=90.0, gt=0)
    #: WhatsApp calls to a list: a session places its next call after its call's end event,
    #: or after this long without one.
    whatsapp_call_timeout_s: float = Field(default=600.0, gt=0)
    #: A send that failed in a way worth trying again (a time-out, a 5xx, a 429) is tried
    #: at most this many times in all, then failed.
    send_max_attempts: int = Field(default=5, ge=1)
    #: The wait before the next try doubles from ``send_backoff_base_s`` up to
    #: ``send_backoff_cap_s`` (with jitter); a ``Retry-After`` wins.
    send_backoff_base_s: float = Field(default=1.0, gt=0)
    send_backoff_cap_s: float = Field(default=300.0, gt=0)
    #: Requests a run's dispatcher has in flight at once.
    send_concurrency: int = Field(default=64, ge=1)
    #: After ``sender_failure_threshold`` retryable failures in a row a sender rests
    #: ``sender_cooloff_s`` seconds.
    sender_cooloff_s: float = Field(default=SENDER_COOLOFF_S, ge=0)
    sender_failure_threshold: int = Field(default=SENDER_FAILURE_THRESHOLD, ge=1)

    def retry_horizon(self) -> timedelta:
        """How long the service retries a webhook (``webhook_retry_horizon_s``)."""
        return timedelta(seconds=self.webhook_retry_horizon_s)
