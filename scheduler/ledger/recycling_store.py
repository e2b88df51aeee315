"""A run's store, second chances: the rows awaiting a verdict, and writing the verdicts.

Mixed into :class:`~scheduler.ledger.run_store.RunStore` (see
:mod:`scheduler.ledger.queries.recycling` for the SQL and why it has its shape). The
verdicts are :mod:`scheduler.dispatch.recycle.verdicts`'s ``Retry | Fallback | Wait |
Final``; the ledger cannot import them (``scheduler.dispatch`` imports the ledger), so it
reads them by their shape: the protocols below, which those dataclasses satisfy.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, cast, runtime_checkable

from scheduler.ledger import access
from scheduler.ledger.exceptions import RunStateError
from scheduler.ledger.queries import recycling as rq
from scheduler.ledger.rows import Recycled, WatchedRow
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import FINISHED_RUN_STATUSES


@runtime_checkable
class RetryVerdict(Protocol):
    """Another attempt of the same step (``Retry``)."""

    @property
    def rule(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def due_at(self) -> datetime: ...
    @property
    def why(self) -> str: ...


@runtime_checkable
class FallbackVerdict(Protocol):
    """The fallback step in the child run (``Fallback``)."""

    @property
    def attempt(self) -> int: ...
    @property
    def channel(self) -> str: ...
    @property
    def why(self) -> str: ...


@runtime_checkable
class WaitVerdict(Protocol):
    """Nothing to decide yet (``Wait``): nothing is written."""

    @property
    def until(self) -> datetime: ...
    @property
    def why(self) -> str: ...


@runtime_checkable
class FinalVerdict(Protocol):
    """No more attempts (``Final``)."""

    @property
    def reached(self) -> bool: ...
    @property
    def why(self) -> str: ...


AnyVerdict = RetryVerdict | FallbackVerdict | WaitVerdict | FinalVerdict


#: Which protocol each verdict class satisfies, found once per class (a runtime protocol
#: check costs about 0.1 ms: 2,000 verdicts took a quarter of a second).
_KINDS: dict[type, type] = {}


def _kind(verdict: object) -> type:
    cls = type(verdict)
    if cls not in _KINDS:
        _KINDS[cls] = next((p for p in (RetryVerdict, FallbackVerdict, FinalVerdict)
                            if isinstance(verdict, p)), WaitVerdict)
    return _KINDS[cls]


def to_write(row: WatchedRow, verdict: AnyVerdict) -> rq.Write | None:
    """The ledger's write for ``verdict`` on ``row`` (None for a wait)."""
    kind = _kind(verdict)
    if kind is RetryVerdict:
        retry = cast(RetryVerdict, verdict)
        return rq.Write(row, "retry", retry.why, rule=retry.rule, attempt=retry.attempt,
                        due_at=retry.due_at)
    if kind is FallbackVerdict:
        fallback = cast(FallbackVerdict, verdict)
        return rq.Write(row, "fallback", fallback.why, rule=rq.FALLBACK_RULE,
                        attempt=fallback.attempt)
    if kind is FinalVerdict:
        final = cast(FinalVerdict, verdict)
        return rq.Write(row, "final", final.why, reached=final.reached)
    return None


class RecyclingStore:
    """Second chances of run ``run_id`` (the :class:`RunStore` mixin; see the module)."""

    ledger: Ledger
    run_id: int

    def watched(self, now: datetime, limit: int = 2000, *,
                after_id: int = 0) -> list[WatchedRow]:
        """The run's rows awaiting a verdict (sent or settled, ``watch`` set), oldest
        first, at most ``limit`` after ``after_id`` (page with the last id read). ``now``
        is the caller's time; every such row is returned whatever it is."""
        del now  # what a row awaits (an outcome, [fallback] after) is the judge's to say
        with access.read(self.ledger.engine, "read the rows awaiting a verdict") as conn:
            return rq.watched(conn, self.run_id, limit=limit, after_id=after_id)

    def recycle(self, now: datetime,
                decisions: Sequence[tuple[WatchedRow, AnyVerdict]]) -> Recycled:
        """Write the verdicts (waits skipped) in ONE transaction: each row's verdict
        taken once (a row another worker decided is left alone), its retry planned in
        this run or its fallback in the fallback run; what was done."""
        writes = [w for row, verdict in decisions if (w := to_write(row, verdict))]
        with access.transaction(self.ledger.engine,
                                "write the verdicts on the rows' outcomes") as conn:
            child = None
            if any(w.kind == "fallback" for w in writes):
                child = rq.child_of(conn, self.run_id)
                if child is None:
                    raise RunStateError(f"run {self.run_id} has no fallback run to send "
                                        "the fallback step in")
            return rq.recycle(conn, writes, now, child=child)

    def fallback_run(self) -> int | None:
        """This run's fallback run (its child), if it has one."""
        return self.ledger.fallback_run_of(self.run_id)

    def parent(self) -> tuple[int, str] | None:
        """This fallback run's parent run and its status (None: not a fallback run)."""
        with access.read(self.ledger.engine, "read the parent of a fallback run") as conn:
            return rq.parent_of(conn, self.run_id)

    def parent_open(self) -> bool:
        """Whether this run is a fallback run whose parent is not finished (rows may still
        come); False for any other run."""
        with access.read(self.ledger.engine, "read the parent of a fallback run") as conn:
            parent = rq.parent_of(conn, self.run_id)
        return parent is not None and parent[1] not in FINISHED_RUN_STATUSES


__all__ = ["AnyVerdict", "FallbackVerdict", "FinalVerdict", "RecyclingStore",
           "RetryVerdict", "WaitVerdict", "to_write"]
