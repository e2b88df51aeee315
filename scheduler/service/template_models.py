"""Official provider (``cloud_api``) connections and their message templates: bodies, answers.

``docs/service-facts.md`` saw these paths only in third-party callers:
``GET /api/v1/connections/cloud-api/{id}/templates``, ``POST …/templates``,
``DELETE …/templates/{name}`` and ``POST /api/v1/messages/send/template`` with
``{sessionId, to, template: {name, language, bodyVariables: [..]}}``. Everything else is
**ours** (found nowhere):

- ``{id}`` is the connection's ``sessionId``;
- the manual connection ``POST /api/v1/connections/cloud-api`` ``{sessionId,
  phoneNumberId, businessAccountId, accessToken, webhookUrl?}`` → ``{success, data:
  session record}`` (the facts' record fields: ``provider: "cloud_api"``, ``status:
  "connected"``, no QR code); a client tells such a session by ``provider`` (or ``type``);
- a template create body ``{name, language, body, category?}`` (``body`` holds ``{{1}}`` …
  ``{{n}}``, numbered from 1 without gaps) and its record ``{name, language, category,
  body, variables, status}``; a list answer ``{success, data: [record, ...]}``;
- ``DELETE …/templates/{name}?language=xx`` removes one language (every language without it).

The same models check bodies in the client before sending, in the sandbox on receipt and in
the campaign planner.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Literal
from urllib.parse import quote

from pydantic import AliasChoices, Field, field_validator, model_validator

from scheduler.service.requests import API, NonEmpty, PhoneDigits, WireModel
from scheduler.service.responses import ResponseModel

CLOUD_API_PATH = f"{API}/connections/cloud-api"
SEND_TEMPLATE_PATH = f"{API}/messages/send/template"
#: ``type`` of an official provider session (the interface names it).
CLOUD_API = "cloud_api"
#: Template names as the official provider takes them: lower case, digits and ``_``.
NAME_PATTERN = r"^[a-z0-9_]{1,512}$"
#: Language codes such as ``pt_BR``, ``en_US`` or ``es``.
LANGUAGE_PATTERN = r"^[a-z]{2,3}(_[A-Z]{2})?$"
Category = Literal["MARKETING", "UTILITY", "AUTHENTICATION"]
_VARIABLE = re.compile(r"\{\{\s*(\d+)\s*\}\}")


def templates_path(connection_id: str, name: str | None = None) -> str:
    """``/api/v1/connections/cloud-api/{id}/templates[/{name}]`` (escaped)."""
    path = f"{CLOUD_API_PATH}/{quote(connection_id, safe='')}/templates"
    return path if name is None else f"{path}/{quote(name, safe='')}"


def body_variables(text: str) -> int:
    """How many body variables ``text`` holds: ``{{1}}`` … ``{{n}}``, each number used at
    least once, from 1 and without gaps; ``ValueError`` otherwise."""
    numbers = {int(found) for found in _VARIABLE.findall(text)}
    if not numbers:
        return 0
    expected = set(range(1, max(numbers) + 1))
    if numbers != expected:
        missing = ", ".join(f"{{{{{n}}}}}" for n in sorted(expected - numbers))
        if 0 in numbers:
            raise ValueError("variables are numbered from {{1}}, not {{0}}")
        raise ValueError(f"variables must be numbered {{{{1}}}} to {{{{{max(numbers)}}}}} "
                         f"without gaps; missing {missing}")
    return len(numbers)


def fill_body(text: str, values: list[str]) -> str:
    """``text`` with ``{{i}}`` replaced by ``values[i-1]`` (what the recipient reads)."""
    return _VARIABLE.sub(lambda m: values[int(m.group(1)) - 1], text)


class CloudApiConnectBody(WireModel):
    """``POST /api/v1/connections/cloud-api`` (ours): a manual official-provider connection."""

    sessionId: NonEmpty
    phoneNumberId: str = Field(pattern=r"^[0-9]{5,20}$")
    businessAccountId: str = Field(pattern=r"^[0-9]{5,20}$")
    #: The provider's token: a secret, never shown in a repr, an error or a log line.
    accessToken: str = Field(min_length=8, repr=False)
    webhookUrl: str | None = None


class TemplateBody(WireModel):
    """``POST …/templates``: a new template (ours: the body's fields)."""

    name: str = Field(pattern=NAME_PATTERN)
    language: str = Field(pattern=LANGUAGE_PATTERN)
    body: str = Field(min_length=1, max_length=1024)
    category: Category | None = None

    @field_validator("body")
    @classmethod
    def _numbered(cls, value: str) -> str:
        body_variables(value)
        return value


class TemplateRecord(ResponseModel):
    """A template as the connection lists it; ``variables`` counted from ``body`` if absent."""

    name: str
    language: str
    body: str | None = None
    category: str | None = None
    status: str | None = None
    variables: int | None = None

    @model_validator(mode="after")
    def _count(self) -> TemplateRecord:
        if self.variables is None and self.body is not None:
            with contextlib.suppress(ValueError):
                object.__setattr__(self, "variables", body_variables(self.body))
        return self

    @property
    def key(self) -> tuple[str, str]:
        """(name, language): what identifies a template."""
        return self.name, self.language


def template_list(raw: Any) -> list[TemplateRecord]:
    """Templates from ``{success, data: [...]}``, ``{templates: [...]}`` or a bare list."""
    items = raw
    if isinstance(raw, dict):
        items = raw.get("data", raw.get("templates"))
        if isinstance(items, dict):
            items = items.get("templates")
    if not isinstance(items, list):
        raise ValueError("expected a list of templates")
    return [TemplateRecord.model_validate(item) for item in items]


def template_record(raw: Any) -> TemplateRecord:
    """One template from ``{success, data: {...}}`` or the record itself."""
    if isinstance(raw, dict) and "name" not in raw and isinstance(raw.get("data"), dict):
        raw = raw["data"]
    return TemplateRecord.model_validate(raw)


class TemplateRef(WireModel):
    """``template`` of a send: which template, in which language, with which values.

    A campaign step may write ``variables``; the wire name is ``bodyVariables``."""

    name: NonEmpty
    language: NonEmpty
    bodyVariables: list[NonEmpty] | None = Field(
        default=None, validation_alias=AliasChoices("bodyVariables", "variables"),
        serialization_alias="bodyVariables")


class SendTemplateBody(WireModel):
    """``POST /api/v1/messages/send/template``."""

    sessionId: NonEmpty
    to: PhoneDigits
    template: TemplateRef
