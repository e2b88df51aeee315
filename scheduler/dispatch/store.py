"""The store seams: exactly what the engine needs from the ledger, a few doors by role.

The engine holds these protocols, never the concrete ledger or its queries, as listmonk
keeps its campaign runner behind a small store interface. A run's dispatcher holds a
:class:`RunStores`, one store per role: the run's control (:class:`RunControlStore`), its
queue of deliveries and their claims (:class:`QueueStore`), the senders
(:class:`SenderStore`), its A/B test (:class:`ExperimentStore`) and its second chances
(:class:`RecyclingStore`); the wiring (:func:`scheduler.wiring.run_store`) makes them from
the ledger's classes of the same names and adds tracking's matching of stored events
(:data:`MatchEvents`). A ``serve`` worker holds a :class:`WorkerStore`, the trigger process a
:class:`ScheduleStore`, the judge of unknown rows an :class:`UnknownsStore`.

Every method is one transaction or one read; a database error is a
:class:`~scheduler.ledger.exceptions.LedgerError` naming what the engine was doing. The
plain rows it reads (``ledger.rows``) and the changes it writes (``ledger.changes``) are
data; what the engine reads that is its own (:class:`SenderSignals`) is typed here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Protocol

from scheduler.dispatch.conversation.store import ConversationStore
from scheduler.ledger.changes import AudienceCheck, Changes, InDoubt, ProofRule, Settle
from scheduler.ledger.rows import (
    ArmCount,
    DueDelivery,
    ExperimentProgress,
    ExperimentRow,
    ExperimentVerdict,
    LeaseRow,
    Recycled,
    RecycleVerdict,
    ScheduleRow,
    SenderProfileRow,
    SessionStatusRow,
    UnknownRow,
    UptimeInterval,
    WatchedRow,
    WorkerRow,
)
from scheduler.settings.run import RunOptions


class SenderSignals(Protocol):
    """One sender's counts over a window of its sends (what sender care judges)."""

    @property
    def sends(self) -> int: ...
    @property
    def refused(self) -> int: ...
    @property
    def never_sent(self) -> int: ...
    @property
    def undelivered(self) -> int: ...
    @property
    def replies(self) -> int: ...
    @property
    def opt_outs(self) -> int: ...


class RunControlStore(Protocol):
    """One run's control: its options, ownership, the operator's requests, its end."""

    run_id: int

    def options(self) -> RunOptions:
        """The run's stored options."""

    def acquire(self) -> None:
        """Take the run's lease (its sole owner)."""

    def mark_running(self, *, keep_control: bool = False) -> None:
        """Mark the run running (``keep_control``: leave pending requests to the workers)."""

    def beat(self) -> str | None:
        """Renew the run's heartbeat; the operator's pending request (pause/cancel)."""

    def release(self) -> None:
        """Give up the run's lease (a sole owner, at the end)."""

    def end(self, status: str, *, reason: str) -> str:
        """End the run (unless another process did); its status now."""

    def cancel(self) -> str:
        """Cancel the run, skipping its pending rows; its status now."""

    def stop_reason(self) -> str | None:
        """Why the run stopped, as stored."""

    def counts(self) -> dict[str, int]:
        """The run's deliveries by state."""


class QueueStore(Protocol):
    """One run's deliveries: what is due, the claims, the settled outcomes, rows in doubt."""

    def due(self, now: datetime, *, limit: int, after_seq: int = -1,
            senders: Collection[str] | None = None,
            part: tuple[int, int] | None = None) -> list[DueDelivery]:
        """Planned rows whose time has come, in plan order, after ``after_seq``."""

    def work_left(self) -> tuple[int, datetime | None]:
        """Rows still to send, and when the next is due."""

    def sent_today(self, day_start: datetime) -> dict[str, int]:
        """Sends per sender since ``day_start``, in every run."""

    def nth_send(self, sender: str, since: datetime, n: int) -> datetime | None:
        """When ``sender``'s ``n``-th send since ``since`` went out."""

    def earliest_verifying(self) -> datetime | None:
        """When the first row being verified ends its grace."""

    def write(self, settled: Sequence[tuple[Changes, datetime]],
              claims: Sequence[tuple[int, str]] = (), now: datetime | None = None, *,
              worker: str | None = None,
              caps: Mapping[str, tuple[datetime, int]] | None = None,
              audience: AudienceCheck | None = None) -> set[int]:
        """Write settled outcomes and claim rows, in one transaction; the ids claimed
        (``caps``: sender → (since, most sends), counted over every run in it;
        ``audience``: rows over the campaign's audience rules are skipped with why)."""

    def defer(self, rows: Sequence[tuple[int, datetime]]) -> None:
        """Hold rows until their recipient's own window opens."""

    def repair_waiting_steps(self, now: datetime) -> None:
        """Release later steps whose earlier step settled without releasing them."""

    def expire(self, now: datetime) -> int:
        """Expire every row still pending; how many."""

    def settle_in_doubt(self, now: datetime, proof: ProofRule,
                        decide: Callable[[InDoubt], Settle], *, grace_over: bool = False,
                        only: Collection[int] | None = None,
                        step_delays_s: tuple[float, ...] = (0.0,)) -> dict[str, int]:
        """Settle rows that may or may not have been sent; how many went each way."""


class SenderStore(Protocol):
    """The senders, across runs: profiles and states, sends, sessions and calls."""

    def sender_profiles(self, senders: Collection[str], now: datetime, *,
                        new_state: str) -> dict[str, SenderProfileRow]:
        """The profiles of ``senders``, each made first when missing (``new_state``)."""

    def read_sender_profiles(self, senders: Collection[str]) -> dict[str, SenderProfileRow]:
        """The stored profiles of ``senders``."""

    def change_sender_state(self, sender: str, state: str, reason: str | None, now: datetime,
                            *, source: str, score: float | None = None,
                            throttle: float | None = None) -> bool:
        """Move a sender to ``state`` (kept in its history); True when it changed."""

    def advance_warm_day(self, sender: str, local_date: date, day: int) -> bool:
        """Set a sender's warm-up day for ``local_date`` (once per date)."""

    def sender_signals(self, senders: Collection[str], since: datetime,
                       undelivered_before: datetime) -> Mapping[str, SenderSignals]:
        """What the ledger knows of each sender's sends since ``since``."""

    def last_sends(self, senders: Collection[str]) -> dict[str, datetime]:
        """Each sender's latest dispatch, any run."""

    def session_statuses(self, senders: Sequence[str], since: datetime
                         ) -> dict[str, SessionStatusRow]:
        """The latest ``connection.status`` of each sender's session since ``since``."""

    def calls_in_progress(self, since: datetime, channel: str) -> tuple[int, int]:
        """Calls in progress in this run, and in every running run of ``channel``."""

    def calls_under_way(self, senders: Sequence[str], since: datetime
                        ) -> dict[str, datetime]:
        """Senders with a call under way, and when it was claimed."""


class ExperimentStore(Protocol):
    """The run's A/B test (scheduler/dispatch/dispatcher/experiment.py)."""

    def experiment_progress(self) -> ExperimentProgress | None:
        """Where the run's test stands; None when it has none or it is decided."""

    def experiment_due(self, test_sent_at: datetime | None, decide_at: datetime) -> None:
        """Record that the test share is sent (when) and when the test decides."""

    def decide_experiment(self, now: datetime, judge: Callable[
            [ExperimentRow, dict[str, ArmCount]], ExperimentVerdict]
                          ) -> ExperimentVerdict | None:
        """Decide the test once: ``judge`` the arms' counts, send the winner to the held
        rest, store the decision, in one transaction; None when it was decided already."""


class RecyclingStore(Protocol):
    """The run's second chances (scheduler/dispatch/dispatcher/recycling.py)."""

    def watched(self, now: datetime, limit: int = 2000, *,
                after_id: int = 0) -> list[WatchedRow]:
        """The run's rows awaiting a verdict on their outcome, oldest first, at most
        ``limit`` after ``after_id``."""

    def recycle(self, now: datetime,
                verdicts: Sequence[tuple[WatchedRow, RecycleVerdict]]) -> Recycled:
        """Write the verdicts (waits skipped) in one transaction, each row's once: retries
        planned in this run, fallbacks in the fallback run; what was done."""

    def parent(self) -> tuple[int, str] | None:
        """A fallback run's parent run and its status (None: not a fallback run)."""


#: Tracking's matching, given by the wiring: apply the stored events about these message
#: ids (just stored on their deliveries, committed) that matched no delivery yet.
MatchEvents = Callable[[Collection[str], datetime], object]


def _match_nothing(_norms: Collection[str], _now: datetime) -> None:
    return None


@dataclass(frozen=True)
class RunStores:
    """One run's stores, by role (see the module), and tracking's matching."""

    run: RunControlStore
    queue: QueueStore
    senders: SenderStore
    experiment: ExperimentStore
    recycling: RecyclingStore
    match_events: MatchEvents = _match_nothing
    #: Steps that follow replies (None: a store without them, e.g. a test's).
    conversation: ConversationStore | None = None

    @property
    def run_id(self) -> int:
        """The run these stores serve."""
        return self.run.run_id


#: The stores of any run of the ledger (a ``serve`` worker settles runs it does not send).
StoresFor = Callable[[int], RunStores]


class WorkerStore(Protocol):
    """What a ``serve`` worker keeps in the ledger: its row, its sender leases, and the
    rows a dead worker left in doubt (scheduler/dispatch/workers.py)."""

    #: Whether workers share senders by leases (PostgreSQL; SQLite has one worker).
    leasing: bool
    #: The ledger's clock.
    clock: Callable[[], datetime]

    def register(self, worker: str, host: str, pid: int, now: datetime,
                 target: str | None, *, alone_since: datetime | None,
                 is_live: Callable[[WorkerRow], bool]) -> WorkerRow | None:
        """Join the workers; with ``alone_since`` (no leasing), a live worker heard from
        since then (``is_live``) is returned instead and nothing is registered."""

    def day_sends(self, since: datetime, senders: Collection[str]
                  ) -> dict[str, tuple[int, datetime | None]]:
        """Per sender, its sends since ``since`` in any run and its latest claim."""

    def beat(self, worker: str, now: datetime, wanted: int) -> None:
        """The worker's heartbeat (and how many senders its dispatchers want)."""

    def renew(self, worker: str, now: datetime, until: datetime, wanted: int,
              give_up: Collection[str], live_since: datetime
              ) -> tuple[set[str], list[LeaseRow], list[str]]:
        """Heartbeat, renew the worker's leases and give up ``give_up``, in one
        transaction: (renewed senders, every lease, the live workers wanting senders)."""

    def acquire(self, sender: str, worker: str, now: datetime, until: datetime
                ) -> LeaseRow | None:
        """Take ``sender``'s lease (None: another worker holds it)."""

    def take_over(self, sender: str, worker: str, now: datetime, until: datetime,
                  run_ids: Sequence[int]) -> tuple[LeaseRow, list[tuple[int, int]]] | None:
        """Take ``sender`` and list the (run, row) its previous holder left in doubt, in
        one transaction; None when another worker was faster."""

    def run_for_settling(self, run_id: int) -> tuple[str, RunOptions, datetime | None]:
        """A run's channel, stored options and start (to settle its rows in doubt)."""

    def orphaned_rows(self, run_id: int, now: datetime, live_since: datetime,
                      worker: str) -> set[int]:
        """The run's rows left ``dispatching`` by a worker (or a single process) no longer
        live."""

    def stop(self, worker: str, now: datetime) -> None:
        """The worker leaves: no longer live, its leases given up."""


class ScheduleStore(Protocol):
    """The campaigns' schedules and their fires (scheduler/dispatch/triggers.py)."""

    #: The ledger's clock.
    clock: Callable[[], datetime]

    def record_fire(self, name: str, fire_time: datetime, *, status: str = "due",
                    reason: str | None = None) -> bool:
        """Record that ``name`` was due at ``fire_time``; False when it was already."""

    def schedules(self) -> tuple[list[ScheduleRow], set[str]]:
        """Every schedule, and the campaigns that fired already."""

    def put_schedule(self, name: str, definition_path: str, trigger: str,
                     timezone: str) -> None:
        """Register (or replace) a campaign's schedule."""

    def delete_schedule(self, name: str) -> bool:
        """Forget a campaign's schedule; False when unknown."""

    def job_store(self) -> Any:
        """APScheduler's job store in the ledger's database."""


class UnknownsStore(Protocol):
    """What judging a run's ``unknown`` rows reads (scheduler/dispatch/unknowns.py)."""

    def unknown_facts(self, run_id: int, now: datetime, horizon: timedelta
                      ) -> tuple[list[UnknownRow], list[UptimeInterval], set[int]]:
        """The run's ``unknown`` rows, the receivers' uptime since the first one's
        dispatch less ``horizon``, and the rows a stray proof makes unknowable."""


__all__ = ["ExperimentStore", "MatchEvents", "QueueStore", "RecyclingStore",
           "RunControlStore", "RunStores", "ScheduleStore", "SenderSignals", "SenderStore",
           "StoresFor", "UnknownsStore", "WorkerStore"]
