"""``[experiment]`` as a campaign file writes it: test the variants on a share, then send
the winner to the rest.

::

    [experiment]
    test_share = "20%"          # who gets the variants first (a share of the recipients)
    wait = "4h"                 # after the test share's last send, before deciding
    metric = "reply"            # reply | read | click | delivered | answered
    guardrail = "opt_out"       # a variant significantly worse on it never wins
    min_per_variant = 200       # fewer sends in a variant: "not enough sends"
    confidence = 0.95
    no_winner = "control"       # or a variant's name: what goes when nobody wins

The variants themselves are the steps' ``variants`` (:mod:`scheduler.campaign.variants`);
the first variant is the control. Without ``[experiment]`` the variants are a plain split,
compared in the report. The test share is counted by the plan, exactly round(share × N)
recipients split by weight within one (:mod:`scheduler.experiments.exact`), the decision by
:func:`scheduler.experiments.decide` once the test share is sent and ``wait`` has passed.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from scheduler.core.units import parse_duration

#: What a test may compare: the name of a rate (:data:`scheduler.experiments.decision.RATE_NAMES`).
Metric = Literal["reply", "read", "click", "delivered", "answered"]
_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
#: A metric's rate when ``base_rate`` does not say it (for the plan's detectable lift).
TYPICAL_RATES = {"reply": 0.10, "read": 0.50, "click": 0.05, "delivered": 0.90,
                 "answered": 0.50}
#: ``no_winner`` meaning "the control" (the first variant).
CONTROL = "control"
#: ``CampaignSpec.experiment``'s description (the JSON Schema's and the docs').
EXPERIMENT_HELP = ("Test the steps' variants on a share of the recipients, then send the "
                   "winner to the rest; unset: variants are a plain split, compared in the "
                   "report.")


class ExperimentSpec(BaseModel):
    """``[experiment]``: the test share, the wait, the metric, the guardrail and the
    decision's settings (see the module)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # the file says a share and a duration as text: the schema says what the file may hold
    test_share: Annotated[float, WithJsonSchema({"anyOf": [
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$", "examples": ["20%"]},
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}]})] = Field(
        description=(
        'The share of the recipients that gets the variants first ("20%", or 0.2); the '
        "rest wait (held) and get the winner."))
    wait: Annotated[float, WithJsonSchema({"anyOf": [
        {"type": "string", "examples": ["4h", "30m", "1h30m"]},
        {"type": "number", "minimum": 0}]})] = Field(
        default=4 * 3600.0, json_schema_extra={"default": "4h"}, description=(
        'How long after the test share\'s last send the test decides ("4h", "30m").'))
    metric: Metric = Field(default="reply", description=(
        "What makes a variant win: reply, read, click, delivered or answered (calls)."))
    guardrail: Annotated[Literal["opt_out"] | None, WithJsonSchema(
        {"enum": ["opt_out", ""]})] = Field(default="opt_out", description=(
        "A variant whose opt-out rate is significantly higher than the control's never "
        'wins; "" or unset in a table without it: no guardrail.'))
    min_per_variant: int = Field(default=100, ge=0, description=(
        "Fewer sends than this in any variant of the test share: no test, the control "
        "(or no_winner) goes."))
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0, description=(
        "How sure the test must be (0.95: a difference this large by chance 5 times in "
        "100 at most)."))
    base_rate: float | None = Field(default=None, gt=0.0, lt=1.0, description=(
        "The control's expected rate on the metric, for the smallest lift `campaign plan` "
        "says the test can find (unset: reply 0.10, read 0.50, click 0.05, delivered "
        "0.90, answered 0.50)."))
    no_winner: str = Field(default=CONTROL, min_length=1, description=(
        'What goes to the rest when there is no clear winner: "control" (the first '
        "variant) or a variant's name."))

    @field_validator("test_share", mode="before")
    @classmethod
    def _share(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError('expected a share such as "20%" or 0.2')
        if isinstance(value, str):
            found = _SHARE.match(value)
            if found is None:
                raise ValueError(f'{value!r}: expected a share such as "20%" or 0.2')
            value = float(found.group(1)) / 100
        if isinstance(value, int | float) and not 0.0 < float(value) < 1.0:
            raise ValueError(f"{value!r}: the test share must be above 0% and under 100%")
        return value

    @field_validator("wait", mode="before")
    @classmethod
    def _wait(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError('expected a duration such as "4h" or a number of seconds')
        if isinstance(value, str):
            return parse_duration(value)
        if isinstance(value, int | float) and value < 0:
            raise ValueError("must not be negative")
        return value

    @field_validator("guardrail", mode="before")
    @classmethod
    def _guardrail(cls, value: Any) -> Any:
        return None if value == "" else value

    def expected_rate(self) -> float:
        """``base_rate``, or the metric's typical rate."""
        return self.base_rate if self.base_rate is not None else TYPICAL_RATES[self.metric]

    def fallback(self, control: str) -> str:
        """The variant that goes when nobody wins."""
        return control if self.no_winner == CONTROL else self.no_winner
