"""The JSON Schema of a campaign's steps: each step type its own object, per channel.

``campaign validate`` checks a step against its type's body model
(:mod:`scheduler.campaign.steps`), its ``retry`` rules and ``min_talk``
(:mod:`scheduler.campaign.recycle_spec`) and its variants
(:mod:`scheduler.campaign.variants`); this module writes the same rules as JSON Schema
definitions, from the same models, so that an editor refuses ``captoin`` in an image step
as ``validate`` does:

- a step of a WhatsApp campaign is chosen by its ``type`` (``if``/``then``, one object per
  type); an SMS, voice or calls campaign's steps have one object each, ``type`` optional;
- every object is closed (``additionalProperties: false``) and lists the body's fields under
  the wire's names, each also as ``NAME_file`` (the field read from a template file), the
  step's ``type``, ``delay``, ``product`` and ``variants``, and where the channel has them
  ``retry`` (its outcomes) and ``min_talk`` (voice);
- a number, a true/false or a bounded text of a body may be a Jinja2 template instead
  (``pixAmount = "{{ valor|amount }}"``), as the renderer reads it;
- a required field may come from its ``NAME_file`` or, when the step has variants, from
  them; ``NAME`` and ``NAME_file`` together are refused;
- ``[fallback]``'s ``step`` is a step of the fallback's channel, without ``delay``,
  ``variants``, ``product``, ``retry`` nor ``min_talk``.

What needs more than one key's value (exactly one of ``audioUrl`` and ``flowId``, a call
link created or given) or other files (a template's text) is left to ``validate``.
Only draft-7 keywords are used (``if``/``then``/``else``, ``dependencies``).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from scheduler.campaign.recycle_spec import RULE_KEYS
from scheduler.campaign.steps import (
    DISPATCHER_KEYS,
    WHATSAPP_KINDS,
    StepKind,
    step_kind,
)
from scheduler.core.channel_terms import ALL, ChannelTerms, terms_of
from scheduler.settings.retry_rules import MAX_ATTEMPTS, RETRYABLE_SMS_CODES

Schema = dict[str, Any]

#: A Jinja2 template where the body wants a number, a true/false or a bounded text.
TEMPLATE: Schema = {"type": "string", "pattern": r"\{[{%#]", "description": (
    "A Jinja2 template, rendered per recipient; its result is checked row by row.")}
#: A step's ``delay`` (and a retry rule's): a duration or a number of seconds.
DELAY: Schema = {"anyOf": [{"type": "string", "examples": ["10m", "1h30m", "90s"]},
                           {"type": "number", "minimum": 0}],
                 "description": "How long after the previous step: a duration or a number "
                                "of seconds."}
#: The ``type`` names a step of an SMS, voice or calls campaign may give (it may give none).
CHANNEL_TYPES = {t.name: t.step_types for t in ALL if t.step_types}
_NAMES = {t.name: t.schema_name for t in ALL}


def _terms(channel: str | None) -> ChannelTerms | None:
    """The terms of ``channel``; None for a fallback's step (``channel`` None)."""
    return None if channel is None else terms_of(channel)


def whatsapp_kinds() -> dict[str, StepKind]:
    """Every step type of a WhatsApp campaign, by name (``call_event`` included)."""
    return {**WHATSAPP_KINDS, "call_event": step_kind("whatsapp", "call_event")}


def channel_kind(channel: str) -> StepKind:
    """The one step kind of an SMS, voice or calls campaign."""
    return step_kind(channel, None)


def _describe(node: Schema, text: str) -> Schema:
    """``node`` with ``text`` as its description unless it has one."""
    node.setdefault("description", text)
    return node


def _templated(node: Schema, defs: dict[str, Schema]) -> Schema:
    """A body's schema node as a campaign file may write it: objects gain ``NAME_file``
    forms, leaves that would refuse a template string also take one."""
    if "$ref" in node:
        return node
    if "anyOf" in node:  # TOML has no null: an optional field is its one other form
        kept = [n for n in node.pop("anyOf") if n.get("type") != "null"]
        if node.get("default", 0) is None:
            del node["default"]
        if len(kept) > 1:
            node["anyOf"] = [_templated(n, defs) for n in kept]
            return node
        if "$ref" in kept[0]:
            return {**node, **kept[0]}
        node = {**kept[0], **node}
    kind = node.get("type")
    if kind == "object" and "properties" in node:
        return _object(node, defs)
    if kind == "object":  # a table of any keys (a voice step's variables)
        if isinstance(node.get("additionalProperties"), dict):
            node["additionalProperties"] = _templated(node["additionalProperties"], defs)
        return node
    if kind == "array":
        if isinstance(node.get("items"), dict):
            node["items"] = _templated(node["items"], defs)
        return node
    bounded = kind == "string" and ("maxLength" in node or "pattern" in node)
    if kind in ("number", "integer", "boolean") or bounded:
        outer: Schema = {k: node.pop(k) for k in ("title", "default", "description")
                         if k in node}
        return {"anyOf": [node, TEMPLATE], **outer}
    return node


def _object(node: Schema, defs: dict[str, Schema], *, where: str = "") -> Schema:
    """An object of a body: its fields templated, each also as ``NAME_file``; a required
    field may come from its file."""
    props: Schema = {}
    for name, sub in node.get("properties", {}).items():
        if name in DISPATCHER_KEYS:
            continue
        sub.pop("title", None)
        said = f"The `{name}` of {where}." if where else f"The body's `{name}`."
        props[name] = _describe(_templated(sub, defs), said)
        if _takes_text(props[name]):
            props[f"{name}_file"] = {"type": "string", "minLength": 1, "description": (
                f"`{name}` read from a template file (in templates/ or beside the "
                "campaign), rendered per recipient.")}
    node["properties"] = props
    required = [n for n in node.pop("required", []) if n not in DISPATCHER_KEYS]
    if required:
        node["x-required"] = required  # written as rules by _required (variants may give them)
    node["dependencies"] = _not_both(props)
    node["additionalProperties"] = False
    node.pop("title", None)
    if "x-required" in node:
        node.setdefault("allOf", []).extend(_required(node.pop("x-required"), props))
    return node


def _takes_text(node: Schema) -> bool:
    """Whether a field may be a rendered text: a text, a number or a true/false (a table,
    a list or a fixed choice may not come from a file)."""
    if "anyOf" in node:
        return any(_takes_text(n) for n in node["anyOf"])
    return "enum" not in node and "const" not in node and node.get("type") in (
        "string", "number", "integer", "boolean")


def _not_both(props: Schema) -> Schema:
    """``dependencies`` refusing ``NAME`` and ``NAME_file`` together."""
    return {f"{n}_file": {"not": {"required": [n]}} for n in props if f"{n}_file" in props}


def _required(names: list[str], props: Schema) -> list[Schema]:
    """``NAME`` is required unless ``NAME_file`` is given (when it may be)."""
    return [{"if": {"required": [f"{n}_file"]}, "else": {"required": [n]}}
            if f"{n}_file" in props else {"required": [n]} for n in names]


def _body(kind: StepKind, defs: dict[str, Schema]) -> tuple[Schema, list[str]]:
    """(properties, required names) of ``kind``'s body as a step writes it; the body's
    nested objects are added to ``defs``."""
    schema = kind.model.model_json_schema(ref_template="#/$defs/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        if name not in defs:
            defs[name] = _object(sub, defs, where=f"a {name}")
            defs[name].setdefault("description", name)
    if kind.name == "template":
        _template_variables(defs)
    required = [n for n in schema.get("required", []) if n not in DISPATCHER_KEYS]
    schema.pop("required", None)
    body = _object(schema, defs)
    return body["properties"], required


def _template_variables(defs: dict[str, Schema]) -> None:
    """A template step writes ``variables`` (the wire's ``bodyVariables``, also taken)."""
    ref = defs.get("TemplateRef")
    if ref is None or "variables" in ref["properties"]:
        return
    wire = ref["properties"]["bodyVariables"]
    ref["properties"]["variables"] = {**copy.deepcopy(wire), "description": (
        "The values of the template's {{1}}…{{n}}, in order (each a Jinja2 template).")}
    wire["description"] = "The wire's name of `variables`."
    ref["dependencies"]["variables"] = {"not": {"required": ["bodyVariables"]}}


def _case_free(code: str) -> str:
    """A regular expression matching ``code`` in any case."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in code)


def retry_rule(channel: str) -> Schema:
    """One rule of a ``channel`` step's ``retry`` list."""
    outcomes = list(terms_of(channel).retry_on)
    props: Schema = {
        "on": {"enum": outcomes, "description": "The outcome that sends the step again."},
        "delay": {"anyOf": DELAY["anyOf"], "description": (
            "How long after the attempt the next one goes: a duration or seconds.")},
        "max_attempts": {"type": "integer", "minimum": 2, "maximum": MAX_ATTEMPTS,
                         "description": "The most attempts, the first one included."},
        "window": {"type": "string", "examples": ["09:00-20:00"], "description": (
            "The hours a retry may go out (HH:MM-HH:MM), in the recipient's own zone.")},
    }
    if terms_of(channel).segments:
        codes = "|".join(_case_free(c) for c in RETRYABLE_SMS_CODES)
        props["codes"] = {"type": "array", "minItems": 1, "items": {
            "type": "string", "pattern": rf"^\s*(?:{codes})\s*$",
            "examples": list(RETRYABLE_SMS_CODES)}, "description": (
            "The delivery reports' error codes retried (retryable: "
            f"{', '.join(RETRYABLE_SMS_CODES)}).")}
    assert set(props) <= set(RULE_KEYS)
    return {"type": "object", "description": f"A retry rule of a {channel} step.",
            "required": ["on", "delay", "max_attempts"], "properties": props,
            "additionalProperties": False}


def _variant(name: str, body: Schema) -> Schema:
    """A variant of a step whose body is ``body``: a name, a weight, body fields."""
    return {"type": "object", "description": f"A variant of a {name} step.",
            "required": ["name"], "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "pattern": r"\S",
                         "description": "The variant's name; the first is the control."},
                "weight": {"type": "number", "minimum": 0, "description": (
                    "Its share of the recipients against the others' (default 1).")},
                **copy.deepcopy(body)},
            "dependencies": _not_both(body)}


def _step(label: str, types: list[str], body: Schema, required: list[str], *,
          channel: str | None, variant_ref: str | None) -> Schema:
    """A step object: its type, the step keys of ``channel`` (None: a fallback's step)
    and its body; closed."""
    terms = _terms(channel)
    typed = terms is not None and terms.step_endpoints  # WhatsApp's: the type is required
    props: Schema = {"type": ({"const": types[0]} if typed else
                              {"enum": types}) | {"description": (
                                  "What the step sends" + ("." if typed else
                                                           "; optional on this channel."))}}
    if channel is not None:
        props["delay"] = copy.deepcopy(DELAY)
        props["product"] = {"$ref": "#/$defs/ProductRef", "description": (
            "A catalog product shown by the step, fetched once at plan time.")}
        props["variants"] = {"type": "array", "minItems": 2, "items": {"$ref": variant_ref},
                             "description": ("A/B variants: a name, an optional weight and "
                                             "the body fields that replace the step's; the "
                                             "first is the control.")}
    if channel is not None:
        props["name"] = {"type": "string", "minLength": 1, "description": (
            "The step's name: a later step's when, or a keyword, names it.")}
        props["when"] = {"$ref": "#/$defs/When", "description": (
            "When the step goes, from an earlier step's replies, read or clicks.")}
    if terms is not None and terms.retry_on:
        props["retry"] = {"type": "array", "minItems": 1,
                          "items": {"$ref": f"#/$defs/{terms.schema_name}RetryRule"},
                          "description": "Send the step again on these outcomes."}
    if terms is not None and terms.call_length:
        props["min_talk"] = {"anyOf": DELAY["anyOf"], "description": (
            "An answered call shorter than this counts as no_answer.")}
    props.update(copy.deepcopy(body))
    step: Schema = {"type": "object", "description": label, "properties": props,
                    "additionalProperties": False,
                    "dependencies": _not_both(body)}
    rules = _required(required, body)
    if rules and channel is not None:
        step["allOf"] = [{"if": {"required": ["variants"]}, "else": {"allOf": rules}}]
    elif rules:
        step["allOf"] = rules
    return step


def when_schema() -> Schema:
    """A step's ``when`` (see :mod:`scheduler.campaign.conversation_spec`)."""
    from scheduler.campaign.conversation_spec import WHAT, WhenSpec

    node = WhenSpec.model_json_schema()
    node.pop("title", None)
    for name, sub in node["properties"].items():
        sub.pop("title", None)
        kept = [n for n in sub.pop("anyOf", []) if n.get("type") != "null"]
        if kept:
            sub["anyOf"] = kept
        sub.pop("default", None)
        if name in ("not_replied_within", "within", "after"):
            sub["anyOf"] = copy.deepcopy(DELAY["anyOf"])
    node["description"] = ("When the step goes, from an earlier step of the same "
                           "recipient: exactly one of " + ", ".join(WHAT) + ".")
    node["additionalProperties"] = False
    node["minProperties"] = 1
    return node


def step_defs(defs: dict[str, Schema]) -> None:
    """Add every step definition to ``defs``: ``WhatsAppStep`` (choosing a type's
    ``WhatsAppStep_TYPE``), ``SmsStep``, ``VoiceStep``, ``CallsStep``, the fallback's
    ``SmsFallbackStep`` and ``VoiceFallbackStep``, their variants and retry rules."""
    defs["When"] = when_schema()
    kinds = whatsapp_kinds()
    choose = []
    for name, kind in kinds.items():
        body, required = _body(kind, defs)
        defs[f"WhatsAppVariant_{name}"] = _variant(name, body)
        defs[f"WhatsAppStep_{name}"] = _step(
            f"A WhatsApp step of type {name} (POST {kind.path}).", [name], body, required,
            channel="whatsapp", variant_ref=f"#/$defs/WhatsAppVariant_{name}")
        choose.append({"if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                       "then": {"$ref": f"#/$defs/WhatsAppStep_{name}"}})
    defs["WhatsAppStep"] = {
        "type": "object", "required": ["type"], "allOf": choose,
        "description": "A step of a WhatsApp campaign: its type chooses its fields.",
        "properties": {"type": {"enum": list(kinds), "description": "What the step sends."}}}
    for channel, types in CHANNEL_TYPES.items():
        kind = channel_kind(channel)
        body, required = _body(kind, defs)
        title = _NAMES[channel]
        terms = terms_of(channel)
        if terms.retry_on:
            defs[f"{title}RetryRule"] = retry_rule(channel)
        defs[f"{title}Variant"] = _variant(channel, body)
        defs[f"{title}Step"] = _step(
            f"A step of a {channel} campaign (POST {kind.path}).", list(types), body,
            required, channel=channel, variant_ref=f"#/$defs/{title}Variant")
        if not terms.sessions:  # a fallback goes from the account (SMS, voice)
            defs[f"{title}FallbackStep"] = _step(
                f"The [fallback] step on {channel}: sent once, at the fallback's time.",
                list(types), body, required, channel=None, variant_ref=None)


def by_channel(key: str, field: str, target: str) -> list[Schema]:
    """``if``/``then`` rules giving ``field``'s items (``target`` ``items``) or value
    (``target`` ``value``) the step definition of ``key``'s channel (absent: WhatsApp)."""
    rules = []
    for terms in ALL:
        channel = terms.name
        name = terms.schema_name + ("Step" if target == "items" else "FallbackStep")
        if target == "value" and terms.sessions:
            continue
        ref = {"$ref": f"#/$defs/{name}"}
        condition: Schema = {"properties": {key: {"const": channel}}}
        if not terms.step_endpoints or target == "value":
            condition["required"] = [key]
        rules.append({"if": condition, "then": {"properties": {
            field: {"items": ref} if target == "items" else ref}}})
    return rules
