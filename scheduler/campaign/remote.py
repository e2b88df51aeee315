"""What a plan needs to know from the service, and what it makes of it (no I/O here).

Two step features depend on the service's state, read once at plan time
(:mod:`scheduler.usecases.lookups` does the reading):

- a ``template`` step (official provider) is checked against the templates each sender lists:
  every sender must be a ``cloud_api`` connection with a template of that name *and*
  language whose body takes as many variables as the step gives; and a ``cloud_api`` sender
  sends nothing but templates (outside WhatsApp's 24-hour conversation window free-form
  messages are refused, and a campaign cannot know the window);
- a step's ``product = {id = "...", business = "5511..."}`` is fetched once, and its fields are
  the template variable ``product`` of that step (``{{ product.name }}``,
  ``{{ product.price|brl }}``; it hides a CSV column of that name).

Every problem is an :class:`~scheduler.campaign.exceptions.Issue` naming the campaign file,
the step and the template or product.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.campaign.exceptions import Issue
from scheduler.campaign.loader import Campaign, CompiledStep
from scheduler.campaign.products import ProductRef
from scheduler.campaign.rendering import Leaf
from scheduler.campaign.steps import TEMPLATE_KIND
from scheduler.service.template_models import CLOUD_API, TemplateRecord
from scheduler.settings.run import SESSION_CHANNELS

_CALL_KINDS = frozenset({"call", "call_event"})


@dataclass(frozen=True)
class Needs:
    """What a campaign asks of the service at plan time."""

    template_steps: tuple[CompiledStep, ...]
    product_steps: tuple[CompiledStep, ...]
    #: WhatsApp: the senders' kinds (a ``cloud_api`` sender sends templates only).
    sender_kinds: bool

    @property
    def required(self) -> bool:
        """Whether the plan cannot be made without the service (templates, products)."""
        return bool(self.template_steps or self.product_steps)


def needs_of(campaign: Campaign) -> Needs:
    """The templates, products and sender kinds ``campaign``'s plan needs."""
    steps = [s for s in campaign.steps if s.ok]
    return Needs(
        template_steps=tuple(s for s in steps if s.kind is TEMPLATE_KIND),
        product_steps=tuple(s for s in steps if s.product is not None),
        sender_kinds=campaign.spec.channel in SESSION_CHANNELS and bool(campaign.spec.senders),
    )


def product_session(campaign: Campaign, ref: ProductRef) -> str | None:
    """The session that fetches a product: its own, else the campaign's first sender."""
    return ref.session or (campaign.spec.senders[0] if campaign.spec.senders else None)


def _issue(campaign: Campaign, message: str, key: str) -> Issue:
    return Issue(campaign.label, message, key=key, line=campaign.line_of(key))


def template_spec(step: CompiledStep) -> tuple[Any, Any, int]:
    """(name, language, number of variables) of a template step (name and language may
    be template leaves, which :func:`sender_issues` refuses)."""
    spec = step.tree.get("template")
    spec = spec if isinstance(spec, dict) else {}
    values = spec.get("variables", spec.get("bodyVariables")) or []
    return spec.get("name"), spec.get("language"), len(values) if isinstance(values, list) else 0


def _listed(templates: Sequence[TemplateRecord]) -> str:
    return ", ".join(f"{t.name} ({t.language})" for t in templates) or "none"


def _template_issue(campaign: Campaign, step: CompiledStep, sender: str,
                    templates: Sequence[TemplateRecord]) -> Issue | None:
    name, language, given = template_spec(step)
    key = f"{step.key}.template"
    if isinstance(name, Leaf) or isinstance(language, Leaf):
        return _issue(campaign, "template name and language must be plain text (they are "
                      "checked against the connection's templates at plan time)", key)
    found = next((t for t in templates if (t.name, t.language) == (name, language)), None)
    if found is None:
        other = [t.language for t in templates if t.name == name]
        why = (f"has no language {language} (it has: {', '.join(sorted(other))})" if other
               else f"is not among its templates ({_listed(templates)})")
        return _issue(campaign, f"template {name!r} of connection {sender} {why}", f"{key}.name")
    if found.variables is not None and found.variables != given:
        return _issue(campaign, f"template {name!r} ({language}) of connection {sender} takes "
                      f"{found.variables} body variable(s); the step gives {given}",
                      f"{key}.variables")
    return None


def sender_issues(campaign: Campaign, kinds: Mapping[str, str | None],
                  templates: Mapping[str, Sequence[TemplateRecord]]) -> list[Issue]:
    """Problems of the campaign's steps given each sender's kind (``None``: the account has
    no such session) and each ``cloud_api`` sender's templates."""
    issues: list[Issue] = []
    for step in (s for s in campaign.steps if s.ok):
        for sender in campaign.spec.senders:
            kind = kinds.get(sender, "")
            if kind == "":  # not looked up (no service to ask)
                continue
            if step.kind is TEMPLATE_KIND:
                if kind is None:
                    issues.append(_issue(campaign, f"sender {sender} does not exist on the "
                                         "service, so its templates cannot be checked",
                                         "senders"))
                elif kind != CLOUD_API:
                    issues.append(_issue(campaign, f"a template step needs cloud_api senders; "
                                         f"sender {sender} is an unofficial (QR) session",
                                         f"{step.key}.type"))
                else:
                    found = _template_issue(campaign, step, sender, templates.get(sender, ()))
                    if found is not None:
                        issues.append(found)
            elif kind == CLOUD_API and step.kind.name in _CALL_KINDS:
                issues.append(_issue(campaign, f"sender {sender} is a cloud_api connection: "
                                     f"calls (a {step.kind.name} step) are not available on "
                                     "cloud_api connections; use a QR session",
                                     f"{step.key}.type"))
            elif kind == CLOUD_API:
                issues.append(_issue(campaign, f"sender {sender} is a cloud_api connection, "
                                     f"which sends only templates (a {step.kind.name} step is "
                                     "refused outside a 24-hour conversation window): use "
                                     "type = \"template\" or a QR session", f"{step.key}.type"))
    return list({(i.key, i.message): i for i in issues}.values())
