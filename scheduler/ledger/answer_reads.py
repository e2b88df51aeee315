"""The answers of a run's poll and list steps, read for ``campaign status``
(:func:`scheduler.tracking.answers.read_answer_tallies`, which tallies them), on the
caller's snapshot."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import select

from scheduler.ledger.access import Connection
from scheduler.ledger.queries.tables import deliveries


class AnswerReads:
    """The reads of the answers' tallies, on the caller's snapshot ``conn``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def step_answers(self, run_id: int, kinds: tuple[str, ...] = ("poll", "list"),
                     ) -> Iterator[tuple[int, str, str | None]]:
        """``(step, kind, details)`` of the run's poll and list deliveries (sent or not)."""
        d = deliveries.c
        stmt = select(d.step, d.kind, d.details).where(
            d.run_id == run_id, d.kind.in_(list(kinds)), d.state != "skipped")
        for step, kind, details in self.conn.execute(stmt):
            yield int(step), str(kind), details
