"""Settings of the sandbox's per-session trouble: rate-limit storms, logouts, lost receipts.

Each is a ``SandboxConfig`` field holding a mapping from a session id (or ``"*"``, every
session without an entry of its own) to one rule, so a test or a demo can make one sender
of several get into trouble. The behaviour itself is :mod:`scheduler.sandbox.sender_trouble`.
These rules play the service's reactions; they do not predict the real service's thresholds.
"""

from __future__ import annotations

from typing import Annotated, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

#: Key of the rule that applies to every session without a rule of its own.
EVERY_SESSION = "*"
#: The most sends a rule with a window can count (the sandbox keeps that many send times).
MAX_WINDOW_SENDS = 10_000
#: A session id (or ``"*"``) as the key of a per-session rule.
SessionKey = Annotated[str, StringConstraints(min_length=1)]


class RateLimitStorm(BaseModel):
    """After ``after_sends`` accepted sends (within ``window_s`` when set), every send is
    answered 429 with ``Retry-After`` for ``for_s`` seconds of the sandbox clock, or for
    ``for_requests`` requests; then sends are accepted again (and, with ``repeat``, the
    count starts over for the next storm)."""

    model_config = ConfigDict(extra="forbid")

    after_sends: int = Field(ge=1)
    window_s: float | None = Field(default=None, gt=0)
    for_s: float | None = Field(default=None, gt=0)
    for_requests: int | None = Field(default=None, ge=1)
    #: Seconds said in ``Retry-After``; None: the seconds left in a timed storm
    #: (rounded up, at least 1), 1 in a storm counted in requests.
    retry_after_s: int | None = Field(default=None, ge=0)
    repeat: bool = False

    @model_validator(mode="after")
    def _one_length(self) -> Self:
        """A storm lasts either a time or a number of requests."""
        if (self.for_s is None) == (self.for_requests is None):
            raise ValueError("give exactly one of for_s (seconds) or for_requests (a count)")
        if self.window_s is not None and self.after_sends > MAX_WINDOW_SENDS:
            raise ValueError(f"after_sends: at most {MAX_WINDOW_SENDS} with window_s")
        return self


class LogoutRule(BaseModel):
    """Log the session out after ``sends`` accepted sends (within ``window_s`` when set),
    or once the opt-outs its simulated recipients sent per accepted send reach
    ``opt_out_ratio`` (counted from ``min_sends`` sends on); whichever comes first."""

    model_config = ConfigDict(extra="forbid")

    sends: int | None = Field(default=None, ge=1)
    window_s: float | None = Field(default=None, gt=0)
    opt_out_ratio: float | None = Field(default=None, gt=0.0, le=1.0)
    min_sends: int = Field(default=20, ge=1)

    @model_validator(mode="after")
    def _has_a_trigger(self) -> Self:
        """A rule without ``sends`` or ``opt_out_ratio`` would never fire."""
        if self.sends is None and self.opt_out_ratio is None:
            raise ValueError("give sends, opt_out_ratio or both")
        if self.window_s is not None and self.sends is None:
            raise ValueError("window_s applies to sends: give sends too")
        if self.window_s is not None and (self.sends or 0) > MAX_WINDOW_SENDS:
            raise ValueError(f"sends: at most {MAX_WINDOW_SENDS} with window_s")
        return self


#: ``rate_limit_storm``: a storm rule per session id.
StormRules = dict[SessionKey, RateLimitStorm]
#: ``logout_after``: a logout rule per session id.
LogoutRules = dict[SessionKey, LogoutRule]
#: ``never_delivered``: per session id, the share (0..1) of accepted sends never delivered.
NeverDeliveredShares = dict[SessionKey, Annotated[float, Field(ge=0.0, le=1.0)]]


_Rule = TypeVar("_Rule")


def rule_for(rules: dict[str, _Rule], session_id: str) -> _Rule | None:
    """The rule of ``session_id``, else the ``"*"`` rule, else None."""
    found = rules.get(session_id)
    return found if found is not None else rules.get(EVERY_SESSION)
