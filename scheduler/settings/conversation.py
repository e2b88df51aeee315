"""A run's conversation: the conditions of its steps and its reply keywords, parsed once.

Built from the campaign's ``when`` tables and ``[replies]`` when the run is planned
(:mod:`scheduler.campaign.conversation_spec`), stored in the run's options
(``RunOptions.conversation``) and read by the dispatcher's decisions
(:mod:`scheduler.dispatch.conversation`). Every value is already parsed: step indexes,
seconds, keywords folded.

A condition's ``kind`` is one of :data:`Kind`:

- ``replied``: the step goes when the looked-at step gets a reply within ``wait_s``;
- ``reply_matches``: ... a reply matching ``pattern`` (or one of ``keywords``);
- ``not_replied``: the step goes when no reply came within ``wait_s``;
- ``read`` / ``not_read``: read (or not) within ``wait_s``;
- ``clicked`` / ``not_clicked``: a tracked link clicked (or not) within ``wait_s``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["replied", "reply_matches", "not_replied", "read", "not_read", "clicked",
               "not_clicked"]
#: ``[replies] wait``: how long a reply (read, click) condition waits when it names no time.
DEFAULT_WAIT_S = 24 * 3600.0
#: ``[replies] expected_rate``: the share of recipients ``plan`` expects to reply.
DEFAULT_EXPECTED_RATE = 0.3


class _Frozen(BaseModel):
    # built on first use, not at import (issue 32: every reading command imports these)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class StepCondition(_Frozen):
    """When step ``step`` goes for a recipient, judged on step ``looks_at``."""

    step: int = Field(ge=1)
    name: str | None = None
    looks_at: int = Field(ge=0)
    kind: Kind
    #: ``reply_matches``: the regular expression, matched on folded text (None: keywords only)
    pattern: str | None = None
    #: Folded whole replies that also make the step go (``[replies] keywords``).
    keywords: tuple[str, ...] = ()
    #: Seconds from the looked-at step's send until the condition is decided by time.
    wait_s: float = Field(gt=0)
    #: The condition as the campaign file wrote it (shown in plan, status, decisions).
    text: str


class ConversationOptions(_Frozen):
    """Every condition of a run's steps, and the reply rate ``plan`` draws branches at."""

    conditions: tuple[StepCondition, ...]
    expected_rate: float = Field(default=DEFAULT_EXPECTED_RATE, ge=0, le=1)

    def condition(self, step: int) -> StepCondition | None:
        """The condition of ``step`` (None: it goes as any step, after the one before)."""
        return next((c for c in self.conditions if c.step == step), None)

    @property
    def gated_steps(self) -> tuple[int, ...]:
        """The steps that wait for their condition's decision."""
        return tuple(c.step for c in self.conditions)

    def continuation(self, step: int, steps: int) -> tuple[int, ...]:
        """The steps without a condition right after ``step`` (of ``steps``): they follow
        its branch, skipped with it when its condition says no."""
        gated = set(self.gated_steps)
        out: list[int] = []
        for later in range(step + 1, steps):
            if later in gated:
                break
            out.append(later)
        return tuple(out)


__all__ = ["DEFAULT_EXPECTED_RATE", "DEFAULT_WAIT_S", "ConversationOptions", "Kind",
           "StepCondition"]
