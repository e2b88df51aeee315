"""A run's A/B test as a store: where it stands, when it decides, the decision.

:class:`ExperimentStore` is the ledger's implementation of
:class:`scheduler.dispatch.store.ExperimentStore`. Each method is one transaction or one
read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.rows import ArmCount, ExperimentProgress, ExperimentRow, ExperimentVerdict
from scheduler.ledger.runs import Ledger


class ExperimentStore:
    """The ledger as the store of run ``run_id``'s A/B test (see the module)."""

    def __init__(self, ledger: Ledger, run_id: int) -> None:
        self.ledger = ledger
        self.run_id = run_id

    def experiment_progress(self) -> ExperimentProgress | None:
        """Where the run's undecided test stands (None: no test, or decided).

        One snapshot, as :meth:`QueueStore.work_left <scheduler.ledger.queue_store.QueueStore.
        work_left>`: read apart, another worker's decision between the two reads would show
        an undecided test with its held rest already released."""
        with access.snapshot(self.ledger.engine, "read the run's A/B test") as conn:
            row = xq.read(conn, self.run_id)
            if row is None or row.decided_at is not None:
                return None
            pending, held, last = xq.progress(conn, self.run_id)
            return ExperimentProgress(row, pending, held, last)

    def experiment_due(self, test_sent_at: datetime | None, decide_at: datetime) -> None:
        """Record when the test share's last send went out and when the test decides."""
        with access.transaction(self.ledger.engine, "record when the A/B test is due") as conn:
            xq.mark_due(conn, self.run_id, test_sent_at, decide_at)

    def decide_experiment(self, now: datetime, judge: Callable[
            [ExperimentRow, dict[str, ArmCount]], ExperimentVerdict]) -> ExperimentVerdict | None:
        """Decide the run's test once (the conditional UPDATE of ``claim_decision``): the
        arms' counts judged, the held rest planned with the winner, the decision stored,
        all in one transaction (a crash leaves it undecided); None: decided already."""
        with access.transaction(self.ledger.engine, "decide the A/B test") as conn:
            if not xq.claim_decision(conn, self.run_id, now):
                return None
            row = xq.read(conn, self.run_id)
            assert row is not None
            counts = xq.arm_counts(conn, self.run_id, int(row.settings.get("step", 0)),
                                   str(row.settings.get("metric", "reply")))
            verdict = judge(row, counts)
            _pending, _held, last = xq.progress(conn, self.run_id)
            xq.release_held(conn, self.run_id, verdict.goes, now)
            xq.store_decision(conn, self.run_id, winner=verdict.winner, goes=verdict.goes,
                              decision=verdict.decision, decide_at=now, test_sent_at=last)
            return verdict


__all__ = ["ExperimentStore"]
