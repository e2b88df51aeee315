"""The reads of every sender at once: their profiles and their sends since a time.

:class:`SenderReads` is the door ``campaign senders`` (:mod:`scheduler.views.senders`), the
dashboard's overview and senders page (:mod:`scheduler.views.overview`) and ``/metrics``
(:mod:`scheduler.metrics.collector`) read the senders through, on the caller's snapshot.
Each method is one read of :mod:`scheduler.ledger.queries.sender_profiles` (the latest
sends, of :mod:`scheduler.ledger.queries.sender_health`, as the dispatcher's warm-up reads
them); a run's own senders are :class:`scheduler.ledger.run_reads.RunSenderReads`.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import sender_health as shq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.rows import SenderProfileRow


class SenderReads:
    """The senders' profiles and sends, read on ``conn`` (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def profiles(self) -> dict[str, SenderProfileRow]:
        """Every sender's profile, by sender (in the senders' order)."""
        return spq.profiles(self.conn)

    def sends_since(self, senders: Collection[str], since: datetime) -> dict[str, int]:
        """Rows dispatched through each of ``senders`` at or after ``since``, every run (0
        for a sender with none; a row back in ``planned`` is not a send, as for the daily
        cap)."""
        return spq.sends_since(self.conn, senders, since)

    def last_sends(self, senders: Collection[str]) -> dict[str, datetime]:
        """Each sender's latest dispatch, any run (none: never sent): what decides a
        warm-up restarted after an idle spell, read as the dispatcher reads it."""
        return shq.last_sends(self.conn, senders)
