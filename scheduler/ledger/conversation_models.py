"""The ``step_decisions`` table (migration 0019): each condition decided once per recipient.

Kept apart from :mod:`scheduler.ledger.models` like the experiments' table;
:mod:`scheduler.ledger.queries.tables` exposes it. A row is written in the transaction
that moves its delivery out of waiting (``deliveries.gate`` cleared by a conditional
UPDATE, see :mod:`scheduler.ledger.queries.conversation`): one decision per delivery,
backed by the unique ``delivery_id``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Text
from sqlmodel import Field

from scheduler.ledger.table_parts import LedgerTable


class StepDecision(LedgerTable, table=True):
    """Whether a step that waits for its condition goes to one recipient, why and when;
    a reply that came after it is noted (``late_at``, ``late_note``), never undoing it."""

    __tablename__ = "step_decisions"
    __table_args__ = (Index("ix_step_decisions_run", "run_id", "step"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int
    delivery_id: int = Field(unique=True)
    step: int
    to: str
    #: the row of the step the condition looked at (None: the recipient had none)
    looked_id: int | None = Field(default=None, index=True)
    #: ``go`` (the step was queued) or ``skip``
    outcome: str
    reason: str = Field(sa_type=Text)
    decided_at: datetime
    #: the reply that decided it, if one did
    reply_id: int | None = None
    late_at: datetime | None = None
    late_note: str | None = Field(default=None, sa_type=Text)
