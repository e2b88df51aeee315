"""A run's store for steps that follow replies: gate, read the waiting rows, decide.

The ledger's side of :class:`scheduler.dispatch.conversation.store.ConversationStore`
(see :mod:`scheduler.ledger.queries.conversation` for the SQL and why it has its shape).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.conversation_rows import DecisionWrite, GatedRow
from scheduler.ledger.queries import conversation as cq
from scheduler.ledger.runs import Ledger


class ConversationStore:
    """Steps that follow replies of run ``run_id`` (see the module)."""

    def __init__(self, ledger: Ledger, run_id: int) -> None:
        self.ledger = ledger
        self.run_id = run_id

    def gate(self, steps: Sequence[int]) -> int:
        """Mark the planned rows of ``steps`` as waiting for their decision (idempotent;
        before anything of the run is sent)."""
        with access.transaction(self.ledger.engine,
                                "mark the steps that wait for a reply") as conn:
            return cq.gate_steps(conn, self.run_id, steps)

    def gated(self, looks: Mapping[int, int], *, limit: int = 2000, after_id: int = 0,
              clicks: bool = False) -> list[GatedRow]:
        """The rows waiting for a decision, with what their looked-at step shows."""
        with access.read(self.ledger.engine, "read the steps waiting for a reply") as conn:
            return cq.gated_rows(conn, self.run_id, looks, limit=limit, after_id=after_id,
                                 clicks=clicks)

    def decide(self, writes: Sequence[DecisionWrite], now: datetime) -> list[DecisionWrite]:
        """Store the decisions and queue the steps that go, in ONE transaction; the ones
        written (a row another worker decided is left alone)."""
        with access.transaction(self.ledger.engine,
                                "store the decisions on replies") as conn:
            return cq.write_decisions(conn, self.run_id, writes, now)

    def first_step_numbers(self) -> list[str]:
        """The numbers of the run's first step (a rehearsal draws their replies)."""
        with access.read(self.ledger.engine, "read the run's recipients") as conn:
            return cq.first_step_numbers(conn, self.run_id)


__all__ = ["ConversationStore"]
