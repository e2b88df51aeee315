"""A campaign's label filter from a ledger's label state (kept by the receiver).

:func:`label_audience` reads the state of the campaign's sender sessions from a ledger (the
run's, when planning a run); :func:`project_label_audience` from the project's ledger for
``campaign validate`` / ``plan`` / ``preview``, which create none: without a ledger there
is no label state, and a label filter is then an error that says how to get one. The
project's ledger is only read (:func:`~scheduler.ledger.read_only.read_only`): never
created, never migrated.
"""

from __future__ import annotations

from scheduler.campaign.exceptions import DefinitionError, Issue
from scheduler.campaign.label_filter import LabelAudience, resolve_labels
from scheduler.campaign.loader import Campaign
from scheduler.ledger.access import Engine
from scheduler.ledger.label_state import label_state
from scheduler.settings.load import Settings, load_settings


def has_label_filter(campaign: Campaign) -> bool:
    """Whether the campaign names ``labels`` or ``exclude_labels``."""
    return bool(campaign.spec.labels or campaign.spec.exclude_labels)


def label_audience(engine: Engine, campaign: Campaign) -> LabelAudience | None:
    """The campaign's label filter over the ledger's label state (None without one)."""
    if not has_label_filter(campaign):
        return None
    senders = list(campaign.spec.senders)
    labels, chats = label_state(engine, senders)
    return resolve_labels(
        file_label=campaign.label,
        lines={k: campaign.line_of(k) for k in ("labels", "exclude_labels")},
        include=list(campaign.spec.labels), exclude=list(campaign.spec.exclude_labels),
        sessions=senders, labels=labels, chats=chats)


def _ledger_exists(settings: Settings) -> bool:
    if settings.database_url:
        return True
    if settings.project_dir is None and not settings.state_dir.is_absolute():
        return False
    return (settings.state_path() / "campaign.db").is_file()


def project_label_audience(campaign: Campaign) -> LabelAudience | None:
    """The label filter from the project's ledger, read only (not created, not migrated:
    :class:`~scheduler.ledger.read_only.LedgerOutOfDate` when its schema is behind)."""
    if not has_label_filter(campaign):
        return None
    from scheduler.ledger.read_only import read_only

    settings = load_settings(near=campaign.path)
    key = "labels" if campaign.spec.labels else "exclude_labels"
    missing = DefinitionError(Issue(
        campaign.label, "no label state yet: this project has no ledger; the receiver "
        "keeps the sessions' label events while `campaign serve` (or a run) listens",
        key=key, line=campaign.line_of(key)))
    if not _ledger_exists(settings):
        raise missing
    with read_only(settings.resolved_database_url()) as engine:
        if engine is None:
            raise missing
        return label_audience(engine, campaign)
