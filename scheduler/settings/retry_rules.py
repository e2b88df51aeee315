"""A run's second chances, parsed once: retry rules per step and the fallback channel.

Built from the campaign's ``retry = [...]`` (per step), ``min_talk`` (voice steps) and
``[fallback]`` when a run is planned (``scheduler.campaign.options``), stored inside the
run's options (``RunOptions.recycle``, JSON) and read back by the dispatcher's verdicts
(:mod:`scheduler.dispatch.recycle`). Every value is already parsed: seconds, minutes after
midnight, upper-case error codes.

RuleOutcome names (what a rule's ``on`` may say), per channel:

- voice: ``no_answer`` (rang out, ring time-out, voicemail, or an answered call shorter
  than ``min_talk``), ``busy`` (Q.850 17), ``failed`` (ended unanswered for another cause);
- sms: ``undelivered`` (a delivery report with one of the rule's ``codes``);
- calls (WhatsApp calls): ``not_answered``.

WhatsApp messages have no outcome to retry on; their second chance is ``[fallback]``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: What made an attempt of a voice step whose last call was answered but shorter than
#: ``min_talk`` (its ``no_answer`` rule fired): the funnel counts that call as not reached.
SHORT_CALL = "short_call"
#: What a retry rule may react to.
RuleOutcome = Literal["no_answer", "busy", "failed", "undelivered", "not_answered"]
#: SMS error codes worth another try (docs/service-facts.md lists every code).
RETRYABLE_SMS_CODES = ("NETWORK_ERROR", "NO_COVERAGE", "NOT_RECEIVED")
#: SMS error codes that say the number will never get an SMS: never retried.
TERMINAL_SMS_CODES = ("INVALID_NUMBER", "LANDLINE", "BLACKLIST", "CANCELED", "NO_WHATSAPP",
                      "CONTENT_BLOCKED", "REJECTED")
#: When a fallback goes: its first channel did not deliver / was not read / not answered.
FallbackWhen = Literal["not_delivered", "not_read", "not_answered"]
FallbackChannel = Literal["sms", "voice"]
#: How long after an attempt went out its outcome is waited for before it counts as
#: "no outcome" (not retried): an hour.
DEFAULT_OUTCOME_WAIT_S = 3600.0
#: The most attempts a rule may allow (the first one included).
MAX_ATTEMPTS = 10


class _Frozen(BaseModel):
    # built on first use, not at import (issue 32: every reading command imports these)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class RuleWindow(_Frozen):
    """The hours a retry may go out, in the recipient's own zone (minutes after midnight;
    equal ends: the whole day; ``closes_min < opens_min``: overnight)."""

    opens_min: int = Field(ge=0, lt=1440)
    closes_min: int = Field(ge=0, le=1440)


class RetryRule(_Frozen):
    """Try a step again after ``on``: ``delay_s`` later, inside ``window`` (recipient's
    zone), while the recipient's attempts of the step stay within ``max_attempts``."""

    on: RuleOutcome
    delay_s: float = Field(ge=0)
    #: The most attempts of the step for one recipient, the first one included.
    max_attempts: int = Field(ge=2, le=MAX_ATTEMPTS)
    window: RuleWindow | None = None
    #: SMS only: the error codes this rule retries (default: every retryable one).
    codes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _codes(self) -> RetryRule:
        bad = [c for c in self.codes if c in TERMINAL_SMS_CODES]
        if bad:
            raise ValueError(f"{', '.join(bad)} never reach(es) the number: not retried")
        return self

    def retries_code(self, code: str | None) -> bool:
        """Whether this (SMS) rule retries a report with ``code``."""
        if code in TERMINAL_SMS_CODES:
            return False
        return code in (self.codes or RETRYABLE_SMS_CODES)


class StepRecycle(_Frozen):
    """The retry rules of one step, and (voice) the shortest talk that counts as reached."""

    rules: tuple[RetryRule, ...] = ()
    min_talk_s: float | None = Field(default=None, ge=0)

    def rule_for(self, outcome: str) -> RetryRule | None:
        """The rule that reacts to ``outcome`` (at most one rule per outcome)."""
        return next((r for r in self.rules if r.on == outcome), None)


class FallbackOptions(_Frozen):
    """``[fallback]``: after ``after_s`` from a recipient's first send of step 1, if the
    first channel did not reach them (``when``), one step on ``channel``."""

    after_s: float = Field(gt=0)
    when: FallbackWhen
    channel: FallbackChannel


class RecycleOptions(_Frozen):
    """Every second chance of a run: rules per step (by step index), the fallback."""

    steps: dict[int, StepRecycle] = Field(default_factory=dict)
    fallback: FallbackOptions | None = None
    outcome_wait_s: float = Field(default=DEFAULT_OUTCOME_WAIT_S, gt=0)

    def watches(self, step: int) -> bool:
        """Whether rows of ``step`` wait for a verdict on their outcome."""
        has_rules = bool(self.steps.get(step) and self.steps[step].rules)
        return has_rules or (step == 0 and self.fallback is not None)

    def max_attempts(self, step: int) -> int:
        """The most attempts any rule of ``step`` allows (1: no retries)."""
        rules = self.steps[step].rules if step in self.steps else ()
        return max((r.max_attempts for r in rules), default=1)
