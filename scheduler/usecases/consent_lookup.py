"""A campaign's imported consent records, from the project's ledger, read only.

``campaign validate`` / ``plan`` and the rehearsal plan without the run's ledger; a campaign
with ``[recipients] consent = "required"`` and no ``consent_column`` reads the records of
its channel from the project's ledger (never created, never migrated: see
:mod:`scheduler.usecases.label_lookup`). Without a ledger there is no record: every
recipient is skipped for want of consent, and the counts say so.
"""

from __future__ import annotations

from scheduler.campaign.loader import Campaign
from scheduler.settings.load import load_settings
from scheduler.usecases.label_lookup import _ledger_exists


def needs_imported_consent(campaign: Campaign) -> bool:
    """Whether the campaign requires consent from the imported list (no CSV column)."""
    recipients = campaign.spec.recipients
    return recipients.consent == "required" and recipients.consent_column is None


def project_consent(campaign: Campaign) -> dict[str, str] | None:
    """Number -> consent basis for the campaign's channel (None: not needed)."""
    if not needs_imported_consent(campaign):
        return None
    from scheduler.ledger.consent import consent_bases
    from scheduler.ledger.read_only import read_only

    settings = load_settings(near=campaign.path)
    if not _ledger_exists(settings):
        return {}
    with read_only(settings.resolved_database_url()) as engine:
        return {} if engine is None else consent_bases(engine, campaign.spec.channel)
