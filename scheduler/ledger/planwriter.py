"""The plan writer: every chunk of a plan stored in ONE transaction, on its own thread.

See ``Ledger.store_plan``: rendering (the planning thread) and storing (this thread) overlap
on two cores, since SQLite and psycopg release the GIL while they work. The transaction is
a :func:`scheduler.ledger.access.transaction`, so a database error reaches the planner as
one ``LedgerError`` line, and a failure anywhere leaves the ledger as it was.
"""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from scheduler.ledger.access import Connection, Engine, transaction
from scheduler.ledger.queries import names
from scheduler.ledger.queries import plan as pq
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.queries import suppression as sq
from scheduler.ledger.states import DeliveryState

DONE, ABORT = object(), object()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the whole store of a plan (switched back on
    at the end, if it was on).

    The planner already pauses it while it builds a chunk; between chunks, while it waits
    for this writer, the writer's 10⁵ new row tuples would set it off, and it would scan
    the pending chunks' 10⁵ dicts again and again (3 s of a million-row plan's CPU) and
    find nothing: plan rows hold no reference cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Aborted(Exception):
    """The planning thread gave up; the writer rolls back."""


class PlanWriter(threading.Thread):
    """Writes plan chunks in one transaction on its own thread."""

    def __init__(self, engine: Engine, run_id: int, start_at: datetime, *,
                 prepare: Callable[[Connection], None] | None = None,
                 finalize: Callable[[Connection], int | None] | None = None) -> None:
        super().__init__(name=f"plan-writer-{run_id}", daemon=True)
        self.engine, self.run_id, self.start_at = engine, run_id, start_at
        # prepare(conn) runs first, finalize(conn) last, in the same transaction; finalize
        # may return the run's planned count when it is not the number of rows written.
        self.prepare, self.finalize = prepare, finalize
        self.chunks: queue.Queue[Any] = queue.Queue(maxsize=2)
        self.queued = 0
        self.total = 0
        self.error: BaseException | None = None
        self.name_ids: dict[str, int] = {}  # the plan's names' ids (the search by name)

    def run(self) -> None:
        """Store chunks until :data:`DONE` (commit) or :data:`ABORT` (roll back)."""
        try:
            with transaction(self.engine, f"store the plan of run {self.run_id}") as conn:
                rq.tune_bulk_write(conn)
                if self.prepare is not None:
                    self.prepare(conn)
                while (chunk := self.chunks.get()) is not DONE:
                    if chunk is ABORT:
                        raise Aborted
                    self._write(conn, chunk)
                planned = self.finalize(conn) if self.finalize is not None else None
                rq.update_run(conn, self.run_id,
                              planned_count=self.total if planned is None else planned)
        except BaseException as exc:  # handed to the planning thread
            self.error = exc

    def _write(self, conn: Connection, chunk: list[dict[str, Any]]) -> None:
        waiting = (DeliveryState.PLANNED, DeliveryState.HELD)  # held: an A/B test's rest
        suppressed = sq.suppressed_numbers(
            conn, (r["to"] for r in chunk if r["state"] in waiting))
        if suppressed:
            for r in chunk:
                if r["state"] in waiting and r["to"] in suppressed:
                    r["state"], r["reason"] = DeliveryState.SKIPPED, "suppressed"
                    r["choices"] = None
        self._skip_erased(conn, chunk, waiting)
        self.total += pq.insert_deliveries(conn, self.run_id, chunk,
                                           first_seq=self.total, start_at=self.start_at)
        names.note_names(conn, chunk, self.name_ids)  # the page's search by name

    def _skip_erased(self, conn: Connection, chunk: list[dict[str, Any]],
                     waiting: tuple[str, ...]) -> None:
        """Numbers erased at the person's request (their keyed hash is on the list):
        skipped with the list's reason (:mod:`scheduler.ledger.privacy`)."""
        from scheduler.ledger.privacy import erased_among
        from scheduler.ledger.privacy_key import project_key

        found = erased_among(conn, (r["to"] for r in chunk), project_key)
        if not found:
            return
        for r in chunk:
            if r["to"] in found:  # no clear number in any row, skipped or not
                reason, alias = found[r["to"]]
                if r["state"] in waiting:
                    r["state"], r["reason"] = DeliveryState.SKIPPED, reason
                    if "watch" in r:
                        r["watch"] = r["fallback"] = None
                r["to"], r["payload"], r["variables"], r["choices"] = alias, {}, {}, None

    def put(self, item: Any) -> bool:
        """Hand a chunk over (waits while two are pending); False once the writer failed."""
        while self.is_alive():
            try:
                self.chunks.put(item, timeout=0.2)
            except queue.Full:
                continue
            if item is not DONE and item is not ABORT:
                self.queued += len(item)
            return True
        return False

    def abort(self) -> None:
        """The plan failed: roll everything back."""
        self.put(ABORT)
        self.join()

    def finish(self) -> int:
        """Commit and return the number of rows stored, or raise the writer's error."""
        self.put(DONE)
        self.join()
        if self.error is not None:
            raise self.error
        return self.total
