"""What to do with a failed send, and how long to wait before the next try (pure).

Verdicts:

- ``retry``: 5xx, or a connection that was never made: back-off with jitter, then again.
- ``throttled``: 429: the sender slows down; retry after ``Retry-After`` (or back-off).
- ``ambiguous``: a time-out or dropped connection: the service may have taken the message.
  Never retried blindly:
  verified against ``messages.sent`` events first (see ``reconcile``).
- ``sender_down``: the session is unknown or not connected: the row goes to another sender.
- ``stop_run``: 401/403: every further send would fail the same way.
- ``out_of_funds``: 402 or a bulk recipient ``skipped``: the account's wallet ran out; the
  row waits in the plan and the run pauses until the wallet is topped up.
- ``fail``: any other 4xx: the message itself is wrong; the service's text is kept.
"""

from __future__ import annotations

import random
import re
from enum import StrEnum

from scheduler.service.exceptions import (
    AuthenticationError,
    Forbidden,
    InsufficientBalance,
    NoAnswer,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceError,
    SessionNotFound,
)

_SENDER_DOWN = re.compile(
    r"not connected|disconnected|logged.?out|not ready|session not found", re.I
)


class Verdict(StrEnum):
    """What the dispatcher does with the outcome of one send."""

    RETRY = "retry"
    THROTTLED = "throttled"
    AMBIGUOUS = "ambiguous"
    SENDER_DOWN = "sender_down"
    STOP_RUN = "stop_run"
    OUT_OF_FUNDS = "out_of_funds"
    FAIL = "fail"


def stop_reason_for(error: ServiceError) -> str:
    """Why a run stops on a ``STOP_RUN`` error: a refused key (401), or a key without the
    right to send (403: an account member with ``read`` permission), with what to do."""
    if isinstance(error, Forbidden):
        return (f"the service refused this API key the right to send: {error}; use the "
                "account owner's key, or a member's key with write permission on the run's "
                "senders (`campaign members update USER_ID -p write -s SESSION`)")
    return f"the service refused the API key: {error}"


def classify(error: ServiceError) -> Verdict:
    """The verdict for a send that raised ``error``."""
    if isinstance(error, AuthenticationError):
        return Verdict.STOP_RUN
    if isinstance(error, RateLimited):
        return Verdict.THROTTLED
    if isinstance(error, NoAnswer):
        # a time-out or a dropped connection may have been applied; a refused one was not
        return Verdict.AMBIGUOUS if error.maybe_applied else Verdict.RETRY
    if isinstance(error, ServerError):
        return Verdict.RETRY
    if isinstance(error, InsufficientBalance):
        return Verdict.OUT_OF_FUNDS
    if isinstance(error, SessionNotFound):
        return Verdict.SENDER_DOWN
    if isinstance(error, RequestRejected):
        if error.status == 409 or _SENDER_DOWN.search(error.error):
            return Verdict.SENDER_DOWN
        return Verdict.FAIL
    return Verdict.FAIL


def backoff_delay(attempt: int, rng: random.Random, *, base_s: float, cap_s: float) -> float:
    """Seconds to wait before try ``attempt + 1``: exponential, capped, with equal jitter."""
    ceiling = min(cap_s, base_s * (2.0 ** max(0, attempt - 1)))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def retry_delay(verdict: Verdict, attempt: int, rng: random.Random, *,
                retry_after: float | None = None, base_s: float, cap_s: float) -> float:
    """The wait before the next try; ``Retry-After`` wins when the service gave one."""
    delay = backoff_delay(attempt, rng, base_s=base_s, cap_s=cap_s)
    if verdict is Verdict.THROTTLED and retry_after is not None:
        return max(retry_after, 0.0)
    return delay
