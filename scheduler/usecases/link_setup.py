"""Binding a campaign's ``link()`` before its rows are rendered (tracked links).

- :func:`bind_run` (``plan_run``, ``replan_run``): the run's numbers for its links (old ones
  kept from the ledger, new ones after them), the project's signing key and the public
  base; returns the numbers, which the plan stores with its rows.
- :func:`bind_preview` (``campaign validate``, ``preview``, ``plan``): links of the right
  length that do not resolve (see :mod:`scheduler.links.render`).

A campaign that calls ``link()`` with tracking on and no ``webhook_url`` is refused with
an error naming the setting (and the other way out, ``track_links = false``).
"""

from __future__ import annotations

from scheduler.campaign.exceptions import DefinitionError, Issue
from scheduler.campaign.loader import Campaign
from scheduler.campaign.rendering import leaves
from scheduler.ledger.access import Engine
from scheduler.ledger.link_store import LinkStore
from scheduler.links.keys import link_base, link_key
from scheduler.links.render import SETTING_HINT, LinkBinding, LinkKey, number_links
from scheduler.settings.load import Settings, load_settings


def _addresses(campaign: Campaign) -> list[tuple[int, list[str]]]:
    return [(step.index, [a for tree in step.trees for leaf in leaves(tree)
                          for a in leaf.links if a])
            for step in campaign.steps]


def _first_use(campaign: Campaign) -> str | None:
    """The key of the first step whose templates call ``link()``."""
    for step in campaign.steps:
        if any(leaf.links for tree in step.trees for leaf in leaves(tree)):
            return step.key
    return None


def link_issues(campaign: Campaign, settings: Settings | None = None) -> list[Issue]:
    """Why the campaign's links cannot be made (none when it has none or tracks none)."""
    if not campaign.spec.track_links:
        return []
    key = _first_use(campaign)
    if key is None:
        return []
    settings = settings or load_settings(near=campaign.path)
    if link_base(settings) is not None:
        return []
    return [Issue(campaign.label, f"{key} makes a tracked link (link()), which needs the "
                  f"receiver's public address: {SETTING_HINT}", key=key,
                  line=campaign.line_of(key))]


def refuse_unlinkable(campaign: Campaign, settings: Settings | None = None) -> None:
    """Raise :class:`DefinitionError` when the campaign's links cannot be made."""
    issues = link_issues(campaign, settings)
    if issues:
        raise DefinitionError(issues)


def bind_preview(campaign: Campaign, settings: Settings | None = None) -> list[Issue]:
    """Bind links without a run; the issues instead of raising (validate lists them)."""
    settings = settings or load_settings(near=campaign.path)
    issues = link_issues(campaign, settings)
    if _first_use(campaign) is not None:  # without a base: said once, not once per row
        campaign.linker.bind(LinkBinding("preview", base=link_base(settings) or "",
                                         numbers=number_links(_addresses(campaign))))
    return issues


def bind_run(campaign: Campaign, engine: Engine, run_id: int,
             settings: Settings | None = None) -> dict[LinkKey, int]:
    """Bind links for run ``run_id``; the numbers to store with the plan (empty when the
    campaign makes no tracked link)."""
    if not campaign.spec.track_links or _first_use(campaign) is None:
        return {}
    settings = settings or load_settings(near=campaign.path)
    refuse_unlinkable(campaign, settings)
    base = link_base(settings) or ""
    existing = LinkStore(engine).run_links(run_id)
    numbers = number_links(_addresses(campaign), existing)
    key = link_key(settings)
    assert key is not None  # made when missing
    campaign.linker.bind(LinkBinding("run", base=base, key=key, run_id=run_id,
                                     numbers=numbers))
    return numbers
