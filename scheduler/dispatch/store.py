"""The store seam: exactly what the dispatcher needs from the ledger, for one run.

The engine holds a :class:`Store`, never the concrete ledger or its queries, as listmonk
keeps its campaign runner behind a small store interface. The ledger's implementation is
:class:`scheduler.ledger.run_store.RunStore`, made by the wiring
(:func:`scheduler.wiring.run_store`), which also gives it the tracking layer's hook for
events that arrived before their send's id was stored. Every method is one transaction or
one read; a database error is a :class:`~scheduler.ledger.exceptions.LedgerError` naming
what the dispatcher was doing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import date, datetime
from typing import Protocol

from scheduler.dispatch.recycle.verdicts import Verdict as Decision
from scheduler.ledger.changes import AudienceCheck, Changes, InDoubt, ProofRule, Settle
from scheduler.ledger.queries.sender_health import SenderSignals
from scheduler.ledger.rows import (
    ArmCount,
    DueDelivery,
    ExperimentProgress,
    ExperimentRow,
    ExperimentVerdict,
    Recycled,
    SenderProfileRow,
    SessionStatusRow,
    WatchedRow,
)
from scheduler.settings.run import RunOptions


class Store(Protocol):
    """One run's ledger, as the dispatcher sees it."""

    run_id: int

    # the run: its options, ownership, control requests and end

    def options(self) -> RunOptions:
        """The run's stored options."""
        ...

    def acquire(self) -> None:
        """Take the run's lease (its sole owner)."""
        ...

    def mark_running(self, *, keep_control: bool = False) -> None:
        """Mark the run running (``keep_control``: leave pending requests to the workers)."""
        ...

    def beat(self) -> str | None:
        """Renew the run's heartbeat; the operator's pending request (pause/cancel)."""
        ...

    def release(self) -> None:
        """Give up the run's lease (a sole owner, at the end)."""
        ...

    def end(self, status: str, *, reason: str) -> str:
        """End the run (unless another process did); its status now."""
        ...

    def cancel(self) -> str:
        """Cancel the run, skipping its pending rows; its status now."""
        ...

    def stop_reason(self) -> str | None:
        """Why the run stopped, as stored."""
        ...

    def counts(self) -> dict[str, int]:
        """The run's deliveries by state."""
        ...

    # reads

    def due(self, now: datetime, *, limit: int, after_seq: int = -1,
            senders: Collection[str] | None = None,
            part: tuple[int, int] | None = None) -> list[DueDelivery]:
        """Planned rows whose time has come, in plan order, after ``after_seq``."""
        ...

    def work_left(self) -> tuple[int, datetime | None]:
        """Rows still to send, and when the next is due."""
        ...

    def sent_today(self, day_start: datetime) -> dict[str, int]:
        """Sends per sender since ``day_start``, in every run."""
        ...

    def nth_send(self, sender: str, since: datetime, n: int) -> datetime | None:
        """When ``sender``'s ``n``-th send since ``since`` went out."""
        ...

    def calls_in_progress(self, since: datetime, channel: str) -> tuple[int, int]:
        """Calls in progress in this run, and in every running run of ``channel``."""
        ...

    def calls_under_way(self, senders: Sequence[str], since: datetime
                        ) -> dict[str, datetime]:
        """Senders with a call under way, and when it was claimed."""
        ...

    def session_statuses(self, senders: Sequence[str], since: datetime
                         ) -> dict[str, SessionStatusRow]:
        """The latest ``connection.status`` of each sender's session since ``since``."""
        ...

    def earliest_verifying(self) -> datetime | None:
        """When the first row being verified ends its grace."""
        ...

    # writes

    def write(self, settled: Sequence[tuple[Changes, datetime]],
              claims: Sequence[tuple[int, str]] = (), now: datetime | None = None, *,
              worker: str | None = None,
              caps: Mapping[str, tuple[datetime, int]] | None = None,
              audience: AudienceCheck | None = None) -> set[int]:
        """Write settled outcomes and claim rows, in one transaction; the ids claimed
        (``caps``: sender → (since, most sends), counted over every run in it;
        ``audience``: rows over the campaign's audience rules are skipped with why)."""
        ...

    def defer(self, rows: Sequence[tuple[int, datetime]]) -> None:
        """Hold rows until their recipient's own window opens."""
        ...

    def repair_waiting_steps(self, now: datetime) -> None:
        """Release later steps whose earlier step settled without releasing them."""
        ...

    def expire(self, now: datetime) -> int:
        """Expire every row still pending; how many."""
        ...

    def settle_in_doubt(self, now: datetime, proof: ProofRule,
                        decide: Callable[[InDoubt], Settle], *, grace_over: bool = False,
                        only: Collection[int] | None = None,
                        step_delays_s: tuple[float, ...] = (0.0,)) -> dict[str, int]:
        """Settle rows that may or may not have been sent; how many went each way."""
        ...

    # the run's A/B test (scheduler/dispatch/dispatcher/experiment.py)

    def experiment_progress(self) -> ExperimentProgress | None:
        """Where the run's test stands; None when it has none or it is decided."""
        ...

    def experiment_due(self, test_sent_at: datetime | None, decide_at: datetime) -> None:
        """Record that the test share is sent (when) and when the test decides."""
        ...

    def decide_experiment(self, now: datetime, judge: Callable[
            [ExperimentRow, dict[str, ArmCount]], ExperimentVerdict]) -> ExperimentVerdict | None:
        """Decide the test once: ``judge`` the arms' counts, send the winner to the held
        rest, store the decision, in one transaction; None when it was decided already."""
        ...

    # second chances (scheduler/dispatch/dispatcher/recycling.py)

    def watched(self, now: datetime, limit: int = 2000, *,
                after_id: int = 0) -> list[WatchedRow]:
        """The run's rows awaiting a verdict on their outcome, oldest first, at most
        ``limit`` after ``after_id``."""
        ...

    def recycle(self, now: datetime,
                decisions: Sequence[tuple[WatchedRow, Decision]]) -> Recycled:
        """Write the verdicts (waits skipped) in one transaction, each row's once: retries
        planned in this run, fallbacks in the fallback run; what was done."""
        ...

    def parent(self) -> tuple[int, str] | None:
        """A fallback run's parent run and its status (None: not a fallback run)."""
        ...

    # the senders' profiles (sender care: scheduler/dispatch/dispatcher/care.py)

    def sender_profiles(self, senders: Collection[str], now: datetime, *,
                        new_state: str) -> dict[str, SenderProfileRow]:
        """The profiles of ``senders``, each made first when missing (``new_state``)."""
        ...

    def read_sender_profiles(self, senders: Collection[str]) -> dict[str, SenderProfileRow]:
        """The stored profiles of ``senders``."""
        ...

    def change_sender_state(self, sender: str, state: str, reason: str | None, now: datetime,
                            *, source: str, score: float | None = None,
                            throttle: float | None = None) -> bool:
        """Move a sender to ``state`` (kept in its history); True when it changed."""
        ...

    def advance_warm_day(self, sender: str, local_date: date, day: int) -> bool:
        """Set a sender's warm-up day for ``local_date`` (once per date)."""
        ...

    def sender_signals(self, senders: Collection[str], since: datetime,
                       undelivered_before: datetime) -> dict[str, SenderSignals]:
        """What the ledger knows of each sender's sends since ``since``."""
        ...

    def last_sends(self, senders: Collection[str]) -> dict[str, datetime]:
        """Each sender's latest dispatch, any run."""
        ...


#: A store for any run of the ledger (a ``serve`` worker settles runs it does not send).
StoreFor = Callable[[int], Store]

__all__ = ["Store", "StoreFor"]
