"""A campaign's imported consent records, the numbers erased at the person's request and
the suppression list's numbers, from the project's ledger, read only.

``campaign validate`` / ``plan`` and the rehearsal plan without the run's ledger; a campaign
with ``[recipients] consent = "required"`` and no ``consent_column`` reads the records of
its channel from the project's ledger (never created, never migrated: see
:mod:`scheduler.usecases.label_lookup`). Without a ledger there is no record: every
recipient is skipped for want of consent, and the counts say so.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scheduler.campaign.loader import Campaign
from scheduler.settings.load import load_settings
from scheduler.usecases.label_lookup import _ledger_exists

if TYPE_CHECKING:
    from scheduler.privacy.erased import ErasedNumbers


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


def project_erased(campaign: Campaign) -> ErasedNumbers | None:
    """The numbers erased at the person's request, from the project's ledger, read only
    (None before any ``person forget``: no key, or no ledger), so that ``validate`` /
    ``plan`` and the rehearsal skip and count them as a run would."""
    from scheduler.ledger.privacy_key import erasure_key
    from scheduler.ledger.read_only import read_only
    from scheduler.privacy.erased import erased_numbers

    settings = load_settings(near=campaign.path)
    key = erasure_key(settings)
    if key is None or not _ledger_exists(settings):
        return None
    with read_only(settings.resolved_database_url()) as engine:
        return None if engine is None else erased_numbers(engine, key)


def project_listed(campaign: Campaign) -> frozenset[str] | None:
    """The project's suppression list, numbers in clear (opt-out replies and keys, the
    API), read once, read only (None: no ledger, or an empty list), so that
    ``validate`` / ``plan`` and the rehearsal skip and count them as a run would. Checking
    a campaign needs no ledger: one not yet migrated, or not reachable, adds nothing here
    (the run, which migrates it, still skips its numbers), and a note on stderr says the
    counts leave the list out and why."""
    from scheduler.ledger.exceptions import LedgerError
    from scheduler.ledger.read_only import read_only
    from scheduler.ledger.suppression_list import listed_numbers

    settings = load_settings(near=campaign.path)
    if not _ledger_exists(settings):
        return None
    try:
        with read_only(settings.resolved_database_url()) as engine:
            return None if engine is None else listed_numbers(engine)
    except LedgerError as exc:
        print(f"note: the suppression list was not counted here ({exc}); a run still "
              "skips its numbers", file=sys.stderr)
        return None
