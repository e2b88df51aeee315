"""The reads of a run's outcomes beyond its states: each channel's own (SMS reports,
segments and cost; calls' causes, digits and talk time) and the decisions of its steps
that follow replies.

:class:`OutcomeReads` is the door :mod:`scheduler.views.channel_status` and
:mod:`scheduler.views.decisions` read through, on the caller's snapshot (``campaign
status``, ``runs``, the progress bar, the dashboard's run page). Each method is one read of
:mod:`scheduler.ledger.queries.channel_counts`, :mod:`~scheduler.ledger.queries.sender_calls`
or :mod:`~scheduler.ledger.queries.conversation`.
"""

from __future__ import annotations

from typing import Any

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import channel_counts as cc
from scheduler.ledger.queries import conversation as cq
from scheduler.ledger.queries import sender_calls


class OutcomeReads:
    """A run's channel outcomes and step decisions, read on ``conn`` (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def sms_totals(self, run_id: int) -> cc.SmsTotals:
        """The run's SMS segments, cost and priced messages."""
        return cc.sms_totals(self.conn, run_id)

    def sms_failures(self, run_id: int) -> list[cc.SmsFailure]:
        """Undelivered SMS grouped by report event and error code."""
        return cc.sms_failures(self.conn, run_id)

    def call_totals(self, run_id: int) -> cc.CallTotals:
        """A voice run's open calls, calls with digits and talk time."""
        return cc.call_totals(self.conn, run_id)

    def top_digits(self, run_id: int, limit: int) -> list[cc.CountedValue]:
        """The digit sequences pressed most, most first."""
        return cc.top_digits(self.conn, run_id, limit)

    def not_answered_causes(self, run_id: int) -> list[cc.CountedValue]:
        """Calls not answered, by cause."""
        return cc.not_answered_causes(self.conn, run_id)

    def call_run_totals(self, run_id: int) -> sender_calls.CallRunTotals:
        """A calls run's open, timed and recorded calls and their duration."""
        return sender_calls.call_run_totals(self.conn, run_id)

    def decision_counts(self, run_id: int) -> dict[tuple[int, str], int]:
        """The run's decisions per (step, outcome), rows waiting as (step, ``waiting``)."""
        return cq.decision_counts(self.conn, run_id)

    def latest_decisions(self, run_id: int, limit: int) -> list[dict[str, Any]]:
        """The run's latest ``limit`` decisions, newest first."""
        return cq.decisions_of(self.conn, run_id, limit=limit)
