"""The JSON Schema of a campaign file (``campaign.toml``), from the definition's models.

``campaign schema`` prints it, so that an editor's TOML support (Taplo, Even Better TOML)
checks a campaign file as it is typed; the docs' field reference is rendered from it too,
so neither can drift from :class:`~scheduler.campaign.definition.CampaignSpec`.

What the schema says is what the models check key by key: unknown keys, types, ranges,
enumerations, and each step's fields for its channel and type (from the body models
``campaign validate`` checks them with: :mod:`scheduler.campaign.step_schema`), so a
misspelled field of a step is refused at that step. What needs the whole file or other
files (a cron line's fields, a time zone's name, a CSV column, a template's text) is
checked by ``campaign validate``.

The schema keeps to keywords that JSON Schema draft 7 and later read alike (``$ref`` to
``#/$defs/…``, ``if``/``then``/``else``, ``dependencies``; no ``prefixItems``), and
declares draft 7, the newest Taplo reads.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from scheduler.campaign.definition import CampaignSpec
from scheduler.campaign.products import ProductRef
from scheduler.campaign.step_schema import by_channel, step_defs
from scheduler.core.units import ClockTime, ClockWindow, Days, Jitter, Rate

DRAFT = "http://json-schema.org/draft-07/schema#"


class _Generator(GenerateJsonSchema):
    """pydantic's generator, writing a default kept with its text (a rate, a window, the
    days) as that text: ``"20/min"``, not the dataclass's fields."""

    def encode_default(self, dft: Any) -> Any:
        """``str()`` of a value kept with its text; anything else as pydantic encodes it."""
        if isinstance(dft, Rate | Jitter | ClockTime | ClockWindow | Days):
            return str(dft)
        return super().encode_default(dft)


def campaign_schema() -> dict[str, Any]:
    """The JSON Schema of a campaign file, as a JSON-ready dict."""
    schema = CampaignSpec.model_json_schema(schema_generator=_Generator)
    defs = schema.setdefault("$defs", {})
    defs["ProductRef"] = ProductRef.model_json_schema(ref_template="#/$defs/{model}")
    defs["ProductRef"]["description"] = (
        "A catalog product shown by the step, fetched once at plan time; its fields are "
        "the template variable `product`.")
    step_defs(defs)
    for node in schema["properties"].values():  # TOML has no null: an optional table is one
        refs = [n for n in node.pop("anyOf", []) if n.get("type") != "null"]
        if len(refs) == 1 and "$ref" in refs[0]:
            node.update(refs[0])
            node.pop("default", None)
        elif refs:
            node["anyOf"] = refs
    steps = schema["properties"]["steps"]
    steps["items"] = {"type": "object", "description": (
        "A step: its fields are those of its channel and type (WhatsApp: `type` chooses "
        "them), any of them from a template file as NAME_file.")}
    schema["allOf"] = by_channel("channel", "steps", "items")
    fallback = defs["FallbackSpec"]
    fallback["properties"]["step"].pop("additionalProperties", None)
    fallback["allOf"] = by_channel("channel", "step", "value")
    return {"$schema": DRAFT, **{k: v for k, v in schema.items() if k != "title"},
            "title": "campaign file (campaign.toml)"}
