"""``[blanks]`` as a campaign file writes it: a rule per column, and the default.

The definition (:mod:`scheduler.campaign.definition`) reads the table with these models;
what the rules do to a CSV's rows is :mod:`scheduler.campaign.blanks`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WrapValidator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

Policy = Literal["error", "skip", "keep"]


class BlankDefault(BaseModel):
    """``{ default = "cliente" }``: the value a blank cell of the column takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    default: str = Field(min_length=1, description=(
        "The text a blank cell of the column becomes (then the filters apply)."))


def _one_message(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """One error in words for a rule that is neither a policy nor a default table."""
    try:
        return handler(value)
    except ValidationError:
        raise ValueError(f'expected "error", "skip", "keep" or {{ default = "…" }} (a '
                         f"non-empty value), got {value!r}") from None


Rule = Annotated[Policy | BlankDefault, WrapValidator(_one_message)]


class BlanksSpec(BaseModel):
    """``[blanks]``: what a blank (empty or all-space) CSV value does: ``default`` for the
    columns the templates name, then one rule per listed column, named by its header or
    its variable name."""

    model_config = ConfigDict(extra="allow", frozen=True)
    __pydantic_extra__: dict[str, Rule] = Field(init=False)

    default: Policy = Field(default="keep", description=(
        "The rule of every column a template names that is not listed."))

    @property
    def columns(self) -> dict[str, Rule]:
        """The listed columns (as written in the file) and their rules."""
        return dict(self.__pydantic_extra__ or {})
