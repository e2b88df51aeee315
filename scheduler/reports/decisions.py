"""The Recipients' condition columns: each conditional step's decision for the recipient
(the step went, or not) and why, as ``step_decisions`` stored it (issue 35), with a reply
that came after the decision noted (it never undid it).

Shown when one of the report's runs has a decision; read per chunk of the Recipients table
by one range of the decisions' delivery index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.ledger.report_reads import TableReads
from scheduler.reports.source import RunInfo

#: A decision's outcome in the report's words.
OUTCOMES = {"go": "went", "skip": "not sent"}


class StepDecisions:
    """The "Condition" and "Condition's reason" values of the Recipients' rows."""

    def __init__(self, reads: TableReads, runs: Sequence[RunInfo]) -> None:
        self.reads = reads
        self.shown = reads.any_decided([r.id for r in runs])

    def values(self, run_id: int, chunk: Mapping[str, Sequence[Any]]
               ) -> tuple[list[str | None], list[str | None]]:
        """The two columns' values for a chunk of run ``run_id``'s rows
        (``rq.delivery_chunks``'s: their ``id``); None for a row no condition decided."""
        ids = [int(i) for i in chunk["id"]]
        if not ids:
            return [], []
        found = self.reads.decisions_between(run_id, min(ids), max(ids))
        outcomes: list[str | None] = []
        reasons: list[str | None] = []
        for row_id in ids:
            decision = found.get(row_id)
            if decision is None:
                outcomes.append(None)
                reasons.append(None)
                continue
            outcome, reason, late = decision
            outcomes.append(OUTCOMES.get(outcome, outcome))
            reasons.append(f"{reason}; {late}" if late else reason)
        return outcomes, reasons
