"""The ``experiments`` table (migration 0012): one run's A/B test and its decision.

Kept apart from :mod:`scheduler.ledger.models` (which holds the rest of the schema) so each
module stays one screenful of tables; :mod:`scheduler.ledger.queries.tables` exposes it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Text
from sqlmodel import Field

from scheduler.ledger.table_parts import LedgerTable


class Experiment(LedgerTable, table=True):
    """A run's test of its variants: settings, sizes, when it is due and what it decided.

    ``decided_at`` is set once, by the conditional UPDATE that starts the decision's
    transaction (:func:`scheduler.ledger.queries.experiments.claim_decision`).
    """

    __tablename__ = "experiments"

    run_id: int = Field(primary_key=True, foreign_key="runs.id", ondelete="CASCADE")
    #: JSON: [[name, weight], …] in order, the first the control.
    variants: str = Field(sa_type=Text)
    control: str
    #: JSON: test_share, wait_s, metric, guardrail, min_per_variant, confidence, fallback.
    settings: str = Field(sa_type=Text)
    test_size: int
    rest_size: int
    test_sent_at: datetime | None = None
    decide_at: datetime | None = None
    decided_at: datetime | None = None
    winner: str | None = None
    goes: str | None = None
    #: JSON of :class:`scheduler.experiments.Decision`.
    decision: str | None = Field(default=None, sa_type=Text)
