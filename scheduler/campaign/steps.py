"""What a step may be on each channel: its type name, endpoint path and body model.

WhatsApp steps are the service's sends (:data:`scheduler.service.requests.SEND_KINDS`) and
``template`` (``messages/send/template``, for ``cloud_api`` senders, checked against the
connection's templates at plan time by :mod:`scheduler.campaign.remote`);
SMS and voice steps have their own per-recipient body models here, because their wire
shapes (``sms/send``; a recipient of ``voice/bulk``) differ from the message sends:

- ``sms``: ``{text, route?, sender?}`` → ``POST /api/v1/sms/send`` (with ``to``); the
  dispatcher may group equal texts into ``/sms/bulk``.
- ``voice``: ``{audioUrl | flowId, variables?, trunk?, from?, audioSecs?, maxAttempts?,
  name?}`` → one recipient of ``POST /api/v1/voice/bulk`` (``{phone: to, variables}``),
  the only voice endpoint that takes per-recipient variables.

Each plan row's ``payload`` is the model's wire body without ``sessionId`` and ``to``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from scheduler.campaign.call_steps import (
    CALL_TYPES,
    SAMPLES,
    SEND_EVENT_PATH,
    PlaceCallStepBody,
    call_event_model,
    call_path,
)
from scheduler.core.channel_terms import terms_of
from scheduler.service.account_models import VoiceSettings
from scheduler.service.requests import API, SEND_KINDS, NonEmpty, PhoneDigits, WireModel
from scheduler.service.template_models import SEND_TEMPLATE_PATH, SendTemplateBody

#: Keys of a step table that are not body fields (``product``: see ``campaign.remote``;
#: ``retry`` and ``min_talk``: see ``campaign.recycle_spec``; ``name`` and ``when``: see
#: ``campaign.conversation_spec``).
RESERVED_KEYS = frozenset({"type", "delay", "product", "retry", "min_talk", "name", "when"})
#: Body keys the dispatcher sets; a step must not.
DISPATCHER_KEYS = frozenset({"sessionId", "to"})
PLACEHOLDER_TO = "5511999999999"
PLACEHOLDER_SESSION = "preview"

VariableValue = str | int | float | bool


class SmsBody(WireModel):
    """``POST /api/v1/sms/send``: one recipient."""

    to: PhoneDigits
    text: NonEmpty
    route: Literal["otp", "marketing"] | None = None
    sender: str | None = None


class VoiceRecipientBody(VoiceSettings):
    """One recipient of ``POST /api/v1/voice/bulk``, with the call's shared settings."""

    to: PhoneDigits
    variables: dict[str, VariableValue] | None = None


@dataclass(frozen=True, slots=True)
class StepKind:
    """A step's type: name, endpoint path, body model, whether the body has ``sessionId``."""

    name: str
    path: str
    model: type[BaseModel]
    has_session: bool
    #: A stand-in for a templated field whose format the placeholder ``"0"`` would break
    #: (a time, a URL): (field, sample); the rows' values are checked when rendered.
    samples: tuple[tuple[str, str], ...] = ()


SMS_KIND = StepKind("sms", f"{API}/sms/send", SmsBody, False)
VOICE_KIND = StepKind("voice", f"{API}/voice/bulk", VoiceRecipientBody, False)
#: The one kind of the steps of a channel sent from the account, by its first type name.
_ACCOUNT_KINDS = {kind.name: kind for kind in (SMS_KIND, VOICE_KIND)}
#: An official provider (``cloud_api``) template: ``template = {name, language, variables}``.
TEMPLATE_KIND = StepKind("template", SEND_TEMPLATE_PATH, SendTemplateBody, True)
WHATSAPP_KINDS = {
    **{name: StepKind(name, kind.path, kind.model, True) for name, kind in SEND_KINDS.items()},
    TEMPLATE_KIND.name: TEMPLATE_KIND,
}


def step_kind(channel: str, type_name: str | None, *, timezone: str = "UTC",
              fields: dict[str, Any] | None = None) -> StepKind:
    """The kind of a step of ``channel``; ``ValueError`` with the allowed names otherwise.

    ``timezone`` (the campaign's) reads a ``call_event``'s time; ``fields`` (the step's)
    choose a ``call``'s endpoint (``record = true``: ``calls/stream``)."""
    terms = terms_of(channel)
    if terms.step_types:  # one kind a channel (SMS, voice, WhatsApp calls), its type optional
        if type_name not in (None, *terms.step_types):
            raise ValueError(f"{terms.a_step} has type {terms.step_types[0]!r} (or none), "
                             f"not {type_name!r}")
        if terms.sessions:  # WhatsApp calls: the step's fields choose the endpoint
            path = call_path((fields or {}).get("record"))
            return StepKind(CALL_TYPES[0], path, PlaceCallStepBody, True)
        return _ACCOUNT_KINDS[terms.step_types[0]]
    if type_name == "call_event":
        return StepKind("call_event", SEND_EVENT_PATH, call_event_model(timezone), True,
                        SAMPLES)
    names = ", ".join([*WHATSAPP_KINDS, "call_event"])
    if type_name is None:
        raise ValueError(f"type is required: one of {names}")
    if type_name not in WHATSAPP_KINDS:
        raise ValueError(f"unknown type {type_name!r}: one of {names}")
    return WHATSAPP_KINDS[type_name]


def wire_names(kind: StepKind, fields: dict[str, Any]) -> dict[str, Any]:
    """A step's fields under the wire's names: a template's ``variables`` (the campaign's
    word) become ``bodyVariables``, so every row renders straight into the wire body (the
    fast path: 6.7 instead of 9.4 us a row, measured on 50,000 rows)."""
    template = fields.get("template")
    if kind is not TEMPLATE_KIND or not isinstance(template, dict) \
            or "variables" not in template or "bodyVariables" in template:
        return fields
    renamed = {("bodyVariables" if k == "variables" else k): v for k, v in template.items()}
    return {**fields, "template": renamed}


def full_body(kind: StepKind, fields: dict[str, Any], to: str, session: str) -> dict[str, Any]:
    """The body the model validates: the step's fields plus ``to`` (and ``sessionId``)."""
    body = dict(fields)
    body["to"] = to
    if kind.has_session:
        body["sessionId"] = session
    return body


def loc_path(loc: tuple[int | str, ...]) -> str:
    """``("cards", 0, "buttons")`` → ``cards[0].buttons``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def model_problems(kind: StepKind, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(key path, message) of every way ``body`` fails ``kind``'s model; empty when valid."""
    try:
        kind.model.model_validate(body)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            path = loc_path(tuple(p for p in err["loc"] if p != "__root__"))
            message = _in_words(err)
            if err["type"] == "extra_forbidden":
                message = f"{kind.name} has no field {path!r}" + (
                    "" if "." in path or "[" in path else _fields_hint(kind, path))
            elif err["type"] == "missing":
                message = f"required field {path!r} is missing"
            elif "input" in err and isinstance(err["input"], str | int | float):
                message += f" (got {err['input']!r})"
            problems.append((path, message))
        return problems
    return []


def _fields_hint(kind: StepKind, wrong: str) -> str:
    """What a step of ``kind`` takes, and the closest name to ``wrong``: a campaign author
    who wrote ``template = "…"`` on a text step learns ``text`` / ``text_file``."""
    import difflib

    names = sorted(field.alias or name for name, field in kind.model.model_fields.items()
                   if (field.alias or name) not in DISPATCHER_KEYS | {"async"})
    close = difflib.get_close_matches(wrong.removesuffix("_file"), names, n=1)
    mean = f"; did you mean {close[0]!r}?" if close else ""
    article = "an" if kind.name[:1] in "aeiou" else "a"
    return (f"{mean} ({article} {kind.name} step takes {', '.join(names)}, and delay; any "
            "of them from a template file as NAME_file)")


def _in_words(err: Any) -> str:
    """pydantic's message of a body error, as a campaign author would say it."""
    ctx, kind = err.get("ctx") or {}, err["type"]
    given = err.get("input")
    count = len(given) if isinstance(given, list | str) else None
    if kind == "too_short" and "min_length" in ctx:
        return f"needs at least {ctx['min_length']} items, has {count}"
    if kind == "too_long" and "max_length" in ctx:
        return f"takes at most {ctx['max_length']} items, has {count}"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "string_too_long" and "max_length" in ctx:
        return f"takes at most {ctx['max_length']} characters, has {count}"
    return str(err["msg"]).removeprefix("Value error, ").replace("Input should be", "expected", 1)


#: Strings a "free" templated field must accept unchanged (see :func:`free_leaves`).
PROBES = ("x", "0", "-1.5", "true", "Olá, 😀 {{ }} <b>\n\t" * 300, "a" * 5000)


def free_leaves(step: Any, session: str) -> frozenset[int] | None:
    """Ids of the step's leaves that must not render empty, when every leaf is *free*.

    A leaf is free when the model accepts each of :data:`PROBES` at its place and dumps it
    back unchanged (a plain ``str`` field, optionally ``min_length=1``). Then the model's
    verdict on a row depends only on which leaves rendered empty, so rows can skip the
    model. ``None`` when some leaf is not free (a number, a literal, a length limit…) or
    the constant parts do not dump back unchanged: every row is then fully validated.
    """
    from scheduler.campaign.rendering import leaves, placeholder_tree

    kind = step.kind
    required: set[int] = set()
    constant = placeholder_tree(step.tree)
    try:  # a body the model rewrites (a call_event's time) is validated row by row
        if dump_payload(kind.model.model_validate(
                full_body(kind, constant, PLACEHOLDER_TO, session))) != constant:
            return None
    except ValidationError:
        return None
    for leaf in leaves(step.tree):
        for probe in (*PROBES, ""):
            fields = placeholder_tree(step.tree, leaf, probe)
            body = full_body(kind, fields, PLACEHOLDER_TO, session)
            try:
                dumped = dump_payload(kind.model.model_validate(body))
            except ValidationError:
                if probe == "":
                    required.add(id(leaf))
                    continue
                return None
            if dumped != fields:
                return None
    return frozenset(required)


def dump_payload(model: BaseModel) -> dict[str, Any]:
    """The wire body of a validated model without ``sessionId`` and ``to``."""
    body = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    body.pop("sessionId", None)
    body.pop("to", None)
    return body
