"""Catalog product and asynchronous command bodies and answers.

The interface shows the request of ``POST /api/v1/catalog/product/get`` (``sessionId``,
``product_id``, ``business_jid``, ``async``) and says that ``async: true`` queues it and
returns a ``commandId``; the rest is ours (``docs/service-facts.md`` "Found nowhere"):

- the product answer ``{success, data: {id, name, ...}}`` (or the product at the top level);
- the queued acknowledgement ``{success, commandId, status: "queued"}`` (``commandId`` may also
  come inside ``data``);
- ``GET /api/v1/commands/{commandId}`` → ``{success, data: {commandId, status:
  queued|running|done|failed, result?, error?}}``; a done catalog command's ``result`` is the
  product.

The same models are used by the client before sending, by the sandbox on receipt, and by the
command line. Product records are tolerant: every field is optional and extra fields are kept.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduler.service.requests import API, NonEmpty, WireModel
from scheduler.service.responses import ResponseModel, id_text, unwrap

CATALOG_PRODUCT_PATH = f"{API}/catalog/product/get"
#: Ours: the interface shows no endpoint for querying a queued command.
COMMANDS_PATH = f"{API}/commands"
CommandStatus = Literal["queued", "running", "done", "failed"]
#: The statuses after which a command never changes again.
FINISHED: frozenset[str] = frozenset({"done", "failed"})


def command_path(command_id: str) -> str:
    """``/api/v1/commands/{commandId}`` (the id escaped)."""
    return f"{COMMANDS_PATH}/{quote(command_id, safe='')}"


def _flag(value: Any) -> Any:
    """``async`` as a boolean: the catalog documents a boolean, message sends a string."""
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    return value


class CatalogProductBody(WireModel):
    """``POST /api/v1/catalog/product/get``: one product of a business's catalog."""

    sessionId: NonEmpty
    product_id: NonEmpty
    business_jid: NonEmpty
    async_: bool | None = Field(default=None, alias="async")

    @field_validator("async_", mode="before")
    @classmethod
    def _async_flag(cls, value: Any) -> Any:
        return _flag(value)


class CatalogProduct(BaseModel):
    """A catalog product (fields not shown by the interface: all optional, extras kept)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    id: str | None = None
    name: str | None = None
    description: str | None = None
    price: float | None = None
    currency: str | None = None
    availability: str | None = None
    url: str | None = None
    imageUrl: str | None = None
    retailerId: str | None = None

    _ids = field_validator("id", mode="before")(id_text)

    @classmethod
    def from_body(cls, raw: Any) -> CatalogProduct:
        """The product of ``{success, data: {...}}``, ``{success, product: {...}}`` or the
        product itself."""
        if isinstance(raw, dict) and isinstance(raw.get("product"), dict):
            raw = raw["product"]
        body = unwrap(raw, "id")
        if not isinstance(body, dict):
            raise ValueError("the product is not a JSON object")
        return cls.model_validate({k: v for k, v in body.items() if k != "success"})

    def fields(self) -> dict[str, Any]:
        """Every field the service gave (known and extra), without the empty ones."""
        return self.model_dump(mode="json", exclude_none=True)


class CommandAck(ResponseModel):
    """The answer of a request queued with ``async: true``: its ``commandId``."""

    commandId: str
    status: CommandStatus | None = None

    _ids = field_validator("commandId", mode="before")(id_text)

    @classmethod
    def from_body(cls, raw: Any) -> CommandAck:
        """``commandId`` at the top level or inside ``data``."""
        return cls.model_validate(unwrap(raw, "commandId"))


class CommandRecord(ResponseModel):
    """``GET /api/v1/commands/{commandId}``: where a queued command stands."""

    commandId: str
    status: CommandStatus
    result: Any = None
    error: str | None = None

    @field_validator("error", mode="before")
    @classmethod
    def _error_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return str(value.get("message") or value.get("error") or value)
        return value

    @classmethod
    def from_body(cls, raw: Any) -> CommandRecord:
        """The record of ``{success, data: {...}}`` (or the record itself)."""
        return cls.model_validate(unwrap(raw, "commandId"))

    @property
    def finished(self) -> bool:
        """``done`` or ``failed``: the command will not change again."""
        return self.status in FINISHED
