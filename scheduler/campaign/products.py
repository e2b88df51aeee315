"""A step's catalog product: ``product = {id = "...", business = "5511...", session?}``.

The product is fetched once at plan time (:mod:`scheduler.usecases.lookups`) and its fields are
the template variable ``product`` of that step; see :mod:`scheduler.campaign.remote`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from scheduler.campaign.steps import loc_path

_JID_SUFFIX = "@s.whatsapp.net"


class ProductRef(BaseModel):
    """``product = {id, business, session?}`` of a step: which catalog product to show."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, WithJsonSchema({"type": ["string", "integer"]})] = Field(
        min_length=1, description="The product's id in the catalog (text or a number).")
    business: str = Field(min_length=1, description=(
        "The business whose catalog holds it: a number (international digits) or a JID."))
    session: str | None = Field(default=None, min_length=1, description=(
        "The session that fetches it (default: the campaign's first sender)."))

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("business")
    @classmethod
    def _jid(cls, value: str) -> str:
        value = value.strip().lstrip("+")
        if "@" in value:
            return value
        if not value.isdigit() or not 8 <= len(value) <= 15:
            raise ValueError(f"{value!r}: a business number in international digits "
                             "(5511977776666) or its JID (…@s.whatsapp.net)")
        return value + _JID_SUFFIX


def product_ref(raw: Any) -> ProductRef:
    """A step's ``product`` table; ``ValueError`` in a person's words."""
    if not isinstance(raw, dict):
        raise ValueError('product must be a table: product = {id = "...", business = "5511..."}')
    try:
        return ProductRef.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = loc_path(tuple(err["loc"]))
        if err["type"] == "extra_forbidden":
            raise ValueError(f"product has no key {where!r} (keys: id, business, "
                             "session)") from None
        if err["type"] == "missing":
            raise ValueError(f"product needs {where!r}") from None
        raise ValueError(f"product.{where}: {err['msg'].removeprefix('Value error, ')}") \
            from None


def product_context(product: Mapping[str, Any]) -> dict[str, Any]:
    """The template variables a fetched product gives its step: ``product``."""
    return {"product": dict(product)}
