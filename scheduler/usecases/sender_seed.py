"""The project's sender profiles, for a rehearsal's throw-away ledger to start from.

A rehearsal plays a campaign on a simulated clock in a ledger of its own; its senders
should start where the project's ledger has them (a sender on day 3 of its warm-up ramp is
capped at 65 on the rehearsal's first day, a paused one sends nothing), not as new ones.
A project with no ledger yet has no profiles: every sender starts new. The project's
ledger is only read (:func:`~scheduler.ledger.read_only.read_only`): never created, never
migrated.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.ledger.read_only import read_only
from scheduler.ledger.rows import SenderProfileRow
from scheduler.ledger.sender_store import stored_profiles
from scheduler.settings.load import Settings


def project_profiles(settings: Settings, senders: Sequence[str]) -> list[SenderProfileRow]:
    """The profiles of ``senders`` in the project's ledger, read only (none when it has no
    ledger); :class:`~scheduler.ledger.read_only.LedgerOutOfDate` when its schema is not
    this version's."""
    if not settings.database_url and settings.project_dir is None \
            and not settings.state_dir.is_absolute():
        return []  # outside a project, with no ledger named: none
    with read_only(settings.resolved_database_url()) as engine:
        if engine is None:
            return []
        return stored_profiles(engine, senders)


__all__ = ["project_profiles"]
