"""Which outcomes a run's channel has, for the views, without the channels' modules.

:mod:`scheduler.dispatch.channels` answers this from the channel classes, which import the
service's request bodies (about forty pydantic classes of its wire models: a sixth of what
``campaign status`` took to start); the views only ask whether a channel's runs have
delivery reports, keys pressed or calls (issue 32: a command loads what it uses).
``tests/views/test_channel_kinds.py`` checks every answer here against the channels'.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.core.channel_terms import ALL


@dataclass(frozen=True)
class OutcomeKind:
    """What comes after a channel's sends (the channel classes' attributes in brackets)."""

    #: Delivery reports with error codes, segments and cost: SMS (``error_codes``).
    reports: bool
    #: Causes, keys pressed and talk time: voice (``reports_keys``).
    keys: bool
    #: Calls answered or not: voice and WhatsApp calls (``has_calls``).
    calls: bool


#: Each channel this program sends on, by ``runs.channel`` (from its terms, written once).
KINDS: dict[str, OutcomeKind] = {
    t.name: OutcomeKind(reports=t.error_codes, keys=t.keys, calls=t.calls) for t in ALL}


def outcome_kind(name: object) -> OutcomeKind | None:
    """The outcomes of channel ``name`` (None for a name this program does not send on)."""
    return KINDS.get(name) if isinstance(name, str) else None


def has_outcomes(name: str) -> bool:
    """Whether runs of channel ``name`` have outcomes of their own, which come after the
    send and are worth waiting for: SMS delivery reports, calls that end (as
    :func:`scheduler.dispatch.channels.has_outcomes`)."""
    kind = outcome_kind(name)
    return kind is not None and (kind.reports or kind.calls)
