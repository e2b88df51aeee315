"""The answers of a run's poll and list steps, read for ``campaign status``
(:func:`scheduler.tracking.answers.read_answer_tallies`, which tallies them), on the
caller's snapshot."""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import answers as aq


class AnswerReads:
    """The reads of the answers' tallies, on the caller's snapshot ``conn``."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def step_answers(self, run_id: int) -> Iterator[tuple[int, str, str | None]]:
        """``(step, kind, details)`` of the run's poll and list deliveries (sent or not)."""
        return aq.step_answers(self.conn, run_id)
