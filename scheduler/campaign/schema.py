"""The JSON Schema of a campaign file (``campaign.toml``), from the definition's models.

``campaign schema`` prints it, so that an editor's TOML support (Taplo, Even Better TOML)
checks a campaign file as it is typed; the docs' field reference is rendered from it too,
so neither can drift from :class:`~scheduler.campaign.definition.CampaignSpec`.

What the schema says is what the models check key by key: unknown keys, types, ranges,
enumerations. What needs the whole file or other files (a cron line's fields, a time
zone's name, a CSV column, a step's body for its channel) is checked by
``campaign validate``; each step is an open table here whose ``type``, ``delay`` and
``product`` are known (its other fields depend on the channel and type: see the
steps reference).

The schema keeps to keywords that JSON Schema draft 7 and later read alike (``$ref`` to
``#/$defs/…``, no ``prefixItems``), and declares draft 7, the newest Taplo reads.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from scheduler.campaign.definition import CampaignSpec
from scheduler.campaign.products import ProductRef
from scheduler.campaign.steps import WHATSAPP_KINDS
from scheduler.units import ClockTime, ClockWindow, Days, Jitter, Rate

DRAFT = "http://json-schema.org/draft-07/schema#"
#: Every step ``type`` of every channel (WhatsApp sends, ``call_event``; ``sms``/``text``
#: on SMS, ``voice``/``call`` on voice, ``call`` on calls).
STEP_TYPES = tuple(sorted({*WHATSAPP_KINDS, "call_event", "sms", "text", "voice", "call"}))


class _Generator(GenerateJsonSchema):
    """pydantic's generator, writing a default kept with its text (a rate, a window, the
    days) as that text: ``"20/min"``, not the dataclass's fields."""

    def encode_default(self, dft: Any) -> Any:
        """``str()`` of a value kept with its text; anything else as pydantic encodes it."""
        if isinstance(dft, Rate | Jitter | ClockTime | ClockWindow | Days):
            return str(dft)
        return super().encode_default(dft)


def _step_schema(defs: dict[str, Any]) -> dict[str, Any]:
    """One ``[[steps]]`` table: its ``type``, ``delay`` and ``product``; other keys open."""
    product = ProductRef.model_json_schema(ref_template="#/$defs/{model}")
    defs["ProductRef"] = product
    return {
        "type": "object",
        "description": ("A step: its type, then the fields of that type's body (any of them "
                        "from a template file as NAME_file). The steps reference lists them."),
        "properties": {
            "type": {"type": "string", "enum": list(STEP_TYPES), "description": (
                "What the step sends; required on WhatsApp (text, image, …, template, "
                "call_event), optional on sms, voice and calls.")},
            "delay": {"anyOf": [{"type": "string", "examples": ["10m", "1h30m", "90s"]},
                                {"type": "number", "minimum": 0}],
                      "description": ("How long after the previous step: a duration or a "
                                      "number of seconds.")},
            "product": {"$ref": "#/$defs/ProductRef", "description": (
                "A catalog product shown by the step, fetched once at plan time; its "
                "fields are the template variable `product`.")},
            "variants": {"type": "array", "minItems": 2, "items": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1},
                               "weight": {"type": "number", "minimum": 0}},
                "additionalProperties": True}, "description": (
                "A/B variants: tables of a name, an optional weight (1) and the body "
                "fields that replace the step's; the first is the control.")},
        },
        "additionalProperties": True,
    }


def campaign_schema() -> dict[str, Any]:
    """The JSON Schema of a campaign file, as a JSON-ready dict."""
    schema = CampaignSpec.model_json_schema(schema_generator=_Generator)
    defs = schema.setdefault("$defs", {})
    schema["properties"]["steps"]["items"] = _step_schema(defs)
    return {"$schema": DRAFT, **{k: v for k, v in schema.items() if k != "title"},
            "title": "campaign file (campaign.toml)"}
