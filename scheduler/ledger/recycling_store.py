"""A run's second chances as a store: the rows awaiting a verdict, and writing the verdicts.

:class:`RecyclingStore` is the ledger's implementation of
:class:`scheduler.dispatch.store.RecyclingStore` (see
:mod:`scheduler.ledger.queries.recycling` for the SQL and why it has its shape). The
verdicts are ``Retry | Fallback | Wait | Final`` of :mod:`scheduler.ledger.rows` (what
:mod:`scheduler.dispatch.recycle.judge` returns).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.queries import recycling as rq
from scheduler.ledger.rows import Fallback, Final, Recycled, RecycleVerdict, Retry, WatchedRow
from scheduler.ledger.runs import Ledger


def to_write(row: WatchedRow, verdict: RecycleVerdict) -> rq.Write | None:
    """The ledger's write for ``verdict`` on ``row`` (None for a wait)."""
    if isinstance(verdict, Retry):
        return rq.Write(row, "retry", verdict.why, rule=verdict.rule, attempt=verdict.attempt,
                        due_at=verdict.due_at)
    if isinstance(verdict, Fallback):
        return rq.Write(row, "fallback", verdict.why, rule=rq.FALLBACK_RULE,
                        attempt=verdict.attempt)
    if isinstance(verdict, Final):
        return rq.Write(row, "final", verdict.why, reached=verdict.reached)
    return None


class RecyclingStore:
    """Second chances of run ``run_id`` (see the module)."""

    def __init__(self, ledger: Ledger, run_id: int) -> None:
        self.ledger = ledger
        self.run_id = run_id

    def watched(self, now: datetime, limit: int = 2000, *,
                after_id: int = 0) -> list[WatchedRow]:
        """The run's rows awaiting a verdict (sent or settled, ``watch`` set), oldest
        first, at most ``limit`` after ``after_id`` (page with the last id read). ``now``
        is the caller's time; every such row is returned whatever it is."""
        del now  # what a row awaits (an outcome, [fallback] after) is the judge's to say
        with access.read(self.ledger.engine, "read the rows awaiting a verdict") as conn:
            return rq.watched(conn, self.run_id, limit=limit, after_id=after_id)

    def recycle(self, now: datetime,
                verdicts: Sequence[tuple[WatchedRow, RecycleVerdict]]) -> Recycled:
        """Write the verdicts (waits skipped) in ONE transaction: each row's verdict
        taken once (a row another worker decided is left alone), its retry planned in
        this run or its fallback in the fallback run; what was done."""
        writes = [w for row, verdict in verdicts if (w := to_write(row, verdict))]
        with access.transaction(self.ledger.engine,
                                "write the verdicts on the rows' outcomes") as conn:
            child = None
            if any(w.kind == "fallback" for w in writes):
                child = rq.child_of(conn, self.run_id)
                if child is None:
                    raise RunStateError(f"run {self.run_id} has no fallback run to send "
                                        "the fallback step in")
            return rq.recycle(conn, writes, now, child=child)

    def parent(self) -> tuple[int, str] | None:
        """This fallback run's parent run and its status (None: not a fallback run)."""
        with access.read(self.ledger.engine, "read the parent of a fallback run") as conn:
            return rq.parent_of(conn, self.run_id)


__all__ = ["RecyclingStore", "to_write"]
