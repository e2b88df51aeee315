"""One run's control as a store: its options, ownership, the operator's requests, its end,
its counts.

:class:`RunControlStore` is the ledger's implementation of
:class:`scheduler.dispatch.store.RunControlStore` (the engine sees only that protocol); the
run's other stores, by role, are :class:`~scheduler.ledger.queue_store.QueueStore`,
:class:`~scheduler.ledger.sender_store.SenderStore`,
:class:`~scheduler.ledger.experiment_store.ExperimentStore` and
:class:`~scheduler.ledger.recycling_store.RecyclingStore`. Each method is one transaction
or one read, naming what it does, so a database error says what the dispatcher was doing.
"""

from __future__ import annotations

from scheduler.ledger import access
from scheduler.ledger.queries import reruns
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.settings.run import RunOptions


class RunControlStore:
    """The ledger as the control of run ``run_id`` (see the module)."""

    def __init__(self, ledger: Ledger, run_id: int) -> None:
        self.ledger = ledger
        self.run_id = run_id

    def options(self) -> RunOptions:
        """The run's stored options."""
        return self.ledger.options(self.ledger.get_run(self.run_id))

    def acquire(self) -> None:
        """Take the run's lease (its sole owner), so a second process cannot dispatch it."""
        self.ledger.acquire(self.run_id)

    def mark_running(self, *, keep_control: bool = False) -> None:
        """Mark the run ``running``; ``keep_control``: leave a pending pause or cancel for
        the worker that obeys it (a ``serve`` worker's share)."""
        self.ledger.set_status(self.run_id, RunStatus.RUNNING, keep_control=keep_control)

    def beat(self) -> str | None:
        """Renew the run's heartbeat; the operator's pending request (pause/cancel)."""
        self.ledger.heartbeat(self.run_id)
        return self.ledger.control(self.run_id)

    def release(self) -> None:
        """Give up the run's lease (a sole owner, at the end)."""
        self.ledger.release(self.run_id)

    def end(self, status: str, *, reason: str) -> str:
        """End the run with ``status`` (unless another process ended it); its status now."""
        return self.ledger.end(self.run_id, status, reason=reason)

    def cancel(self) -> str:
        """Cancel the run: its pending rows skipped; its status now."""
        return self.ledger.cancel_pending(self.run_id)

    def stop_reason(self) -> str | None:
        """Why the run stopped, as stored (another worker may have ended it)."""
        return self.ledger.get_run(self.run_id).stop_reason

    def counts(self) -> dict[str, int]:
        """The run's deliveries by state."""
        return self.ledger.counts(self.run_id)

    def skipped_as_received(self) -> int:
        """Rows of the run skipped because their number received the campaign before (a
        re-run's plan, said by ``campaign run``)."""
        with access.read(self.ledger.engine,
                         f"count the rows of run {self.run_id} skipped as received") as conn:
            return reruns.count_skipped_as_received(conn, self.run_id)


__all__ = ["RunControlStore"]
