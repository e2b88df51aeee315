"""What a watched row's outcome means for the recipient: another attempt, the fallback,
wait, or nothing more (pure types; :func:`scheduler.dispatch.recycle.judge.judge` decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Retry:
    """Plan attempt ``attempt`` of the same step, due at ``due_at``, made by rule ``rule``
    (the outcome it reacted to: ``no_answer``, ``busy``, …)."""

    rule: str
    attempt: int
    due_at: datetime
    why: str


@dataclass(frozen=True, slots=True)
class Fallback:
    """Plan the fallback step on ``channel`` as attempt ``attempt``, due now."""

    attempt: int
    channel: str
    why: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to decide before ``until`` (the outcome is not in, or ``after`` has not
    come)."""

    until: datetime
    why: str


@dataclass(frozen=True, slots=True)
class Final:
    """No more attempts: ``reached`` says whether the recipient was reached."""

    why: str
    reached: bool


Verdict = Retry | Fallback | Wait | Final
