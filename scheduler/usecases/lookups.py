"""Plan-time reads from the service: sender kinds, ``cloud_api`` templates, catalog products.

What is read and why is :mod:`scheduler.campaign.remote`; this module does the reading, once
per plan, before any row is rendered:

- a WhatsApp campaign on a configured service: one ``GET /api/v1/sessions`` (a ``cloud_api``
  sender sends templates only); if it fails and nothing else needs the service, the plan
  goes on with a note (``campaign run`` has checked the senders just before);
- ``template`` steps: each ``cloud_api`` sender's templates (``GET …/templates``). The embedded
  sandbox has no ``cloud_api`` connection, so such a campaign needs a configured service
  (``campaign sandbox`` in another terminal is one): a clear error says so;
- ``product`` steps: each distinct product once (``POST /api/v1/catalog/product/get``); on
  the embedded sandbox through a short-lived one (its products are a pure function of the
  ids). A failure is an error of that step.

A plan that needs none of these makes no request at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler.campaign.exceptions import DefinitionError, Issue
from scheduler.campaign.loader import Campaign
from scheduler.campaign.products import product_context
from scheduler.campaign.remote import (
    Needs,
    needs_of,
    product_session,
    sender_issues,
    template_spec,
)
from scheduler.core.errors import SchedulerError
from scheduler.service.exceptions import ServiceError
from scheduler.service.template_models import CLOUD_API, TemplateRecord
from scheduler.settings.load import Settings, load_settings
from scheduler.wiring import client_for, connect_session, service_target

if TYPE_CHECKING:  # the client (aiohttp, httpx) is imported when a service is asked
    from scheduler.service.client import ServiceClient

T = TypeVar("T")


@dataclass
class RemoteFacts:
    """What the reads found: problems of the campaign, notes for the user."""

    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from synchronous code, also when called inside an event loop (the
    rehearsal plans from async code): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, make()).result()


def _issue(campaign: Campaign, message: str, key: str) -> Issue:
    return Issue(campaign.label, message, key=key, line=campaign.line_of(key))


def _no_service_issues(campaign: Campaign, needs: Needs) -> list[Issue]:
    return [_issue(campaign, "a template step is checked against the templates of its "
                   "cloud_api senders, and no service is configured (the embedded sandbox has "
                   "no cloud_api connection): set CAMPAIGN_BASE_URL and CAMPAIGN_API_KEY (for "
                   "a try, `campaign sandbox` in another terminal, then `campaign templates "
                   "connect` and `campaign templates create`)", f"{step.key}.type")
            for step in needs.template_steps]


async def _kinds(client: ServiceClient, campaign: Campaign, needs: Needs, base_url: str,
                 facts: RemoteFacts) -> dict[str, str | None]:
    from scheduler.service.session_admin import explain

    try:
        records = {r.sessionId: r for r in await client.list_sessions()}
    except ServiceError as exc:
        said = str(explain(exc, base_url=base_url, doing="reading the senders' kinds"))
        if needs.template_steps:
            facts.issues.append(_issue(campaign, said, "senders"))
        else:
            facts.notes.append(f"senders' kinds not read from the service: {said}")
        return {}
    kinds: dict[str, str | None] = {}
    for sender in campaign.spec.senders:
        record = records.get(sender)
        cloud = record is not None and CLOUD_API in (record.type, record.provider)
        kinds[sender] = None if record is None else (CLOUD_API if cloud else "unofficial")
    return kinds


async def _templates(client: ServiceClient, campaign: Campaign, kinds: dict[str, str | None],
                     base_url: str, facts: RemoteFacts) -> dict[str, list[TemplateRecord]]:
    from scheduler.service.session_admin import explain

    found: dict[str, list[TemplateRecord]] = {}
    for sender, kind in kinds.items():
        if kind != CLOUD_API:
            continue
        try:
            found[sender] = await client.list_templates(sender)
        except ServiceError as exc:
            said = explain(exc, base_url=base_url, session_id=sender,
                           doing=f"listing the templates of {sender}")
            facts.issues.append(_issue(campaign, str(said), "senders"))
    return found


async def _products(client: ServiceClient, campaign: Campaign, needs: Needs, base_url: str,
                    embedded: bool, facts: RemoteFacts) -> None:
    fetched: dict[tuple[str, str, str], dict[str, object]] = {}
    connected: set[str] = set()
    for step in needs.product_steps:
        ref = step.product
        assert ref is not None
        key = f"{step.key}.product"
        session = product_session(campaign, ref)
        if session is None:
            facts.issues.append(_issue(campaign, "product needs a session to fetch it "
                                       "through: add session = \"...\"", key))
            continue
        wanted = (session, ref.business, ref.id)
        if wanted not in fetched:
            try:
                if embedded and session not in connected:
                    await connect_session(client, base_url, session, None, show_qr=False)
                    connected.add(session)
                product = await client.get_product(session, ref.id, ref.business)
            except ServiceError as exc:
                facts.issues.append(_issue(campaign, f"product {ref.id!r} of {ref.business} "
                                           f"could not be fetched through {session}: "
                                           f"{type(exc).__name__}: {exc}", key))
                continue
            fetched[wanted] = product.fields()
        step.context = product_context(fetched[wanted])


async def _read(campaign: Campaign, needs: Needs, settings: Settings,
                sandbox_only: bool = False) -> RemoteFacts:
    facts = RemoteFacts()
    with service_target(settings, force_sandbox=sandbox_only) as target:
        async with client_for(settings, target) as client:
            if not target.is_sandbox and (needs.sender_kinds or needs.template_steps):
                kinds = await _kinds(client, campaign, needs, target.base_url, facts)
                templates: dict[str, list[TemplateRecord]] = {}
                if needs.template_steps:
                    templates = await _templates(client, campaign, kinds, target.base_url,
                                                 facts)
                facts.issues.extend(sender_issues(campaign, kinds, templates))
            if needs.product_steps:
                await _products(client, campaign, needs, target.base_url, target.is_sandbox,
                                facts)
    return facts


def read_remote(campaign: Campaign, settings: Settings | None = None, *,
                rehearsal: bool = False) -> RemoteFacts:
    """Read what ``campaign``'s plan needs from the service and set each step's variables
    from it (``step.context``); the problems found are in the answer, not raised.

    ``rehearsal``: never ask the configured service (a rehearsal must not touch it):
    products come from a short-lived embedded sandbox, templates are not checked (the
    rehearsal's sandbox holds the ones the steps name, see :func:`rehearsal_connections`).
    """
    needs = needs_of(campaign)
    if not (needs.required or needs.sender_kinds):
        return RemoteFacts()
    if rehearsal:
        if not needs.product_steps:
            return RemoteFacts()
        return _run(lambda: _read(campaign, needs, settings or Settings(), sandbox_only=True))
    settings = settings or load_settings(near=campaign.path)
    try:
        service = settings.service_endpoint()
    except SchedulerError as exc:
        if needs.required:
            raise
        return RemoteFacts(notes=[f"senders' kinds not read from the service: {exc}"])
    if service is None:
        if not needs.required:
            return RemoteFacts()  # the embedded sandbox's senders are QR sessions
        if needs.template_steps:
            return RemoteFacts(issues=_no_service_issues(campaign, needs))
    return _run(lambda: _read(campaign, needs, settings))


def require_remote(campaign: Campaign, settings: Settings | None = None, *,
                   rehearsal: bool = False) -> RemoteFacts:
    """:func:`read_remote`, raising one :class:`DefinitionError` with every problem found."""
    facts = read_remote(campaign, settings, rehearsal=rehearsal)
    if facts.issues:
        raise DefinitionError(facts.issues)
    return facts


async def rehearsal_connections(client: ServiceClient, campaign: Campaign,
                                senders: list[str]) -> None:
    """On a rehearsal's embedded sandbox: make each sender of a campaign with ``template``
    steps a ``cloud_api`` connection holding the templates those steps name (a body with
    as many variables as the step gives), so the rehearsal sends them. The real templates
    are checked by ``campaign plan`` and ``campaign run``, not by a rehearsal."""
    needs = needs_of(campaign)
    if not needs.template_steps:
        return
    for sender in senders:
        await client.connect_cloud_api(sender, phone_number_id="1000000",
                                       business_account_id="1000000",
                                       access_token="rehearsal-token")
        made: set[tuple[str, str]] = set()
        for step in needs.template_steps:
            name, language, count = template_spec(step)
            if not isinstance(name, str) or not isinstance(language, str) \
                    or (name, language) in made:
                continue
            made.add((name, language))
            body = " ".join(f"{{{{{i}}}}}" for i in range(1, count + 1)) or name
            await client.create_template(sender, name, language, body)
