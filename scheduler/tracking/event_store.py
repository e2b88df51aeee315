"""Store events and apply them, one transaction per batch (the receiver's only writes).

:func:`store_and_apply` inserts the raw events (a ``dedupe_key`` already stored is a no-op),
then applies the new ones in the same transaction: when it commits, the event is both
durable and applied. If anything fails (a bug, a bad row), the transaction is rolled back
and the batch is stored again with each event applied alone in a savepoint; one that still
fails stays stored with ``applied_at`` NULL and its error as ``result``, to be applied
again by :func:`apply_unapplied` at the next start. Database errors (SQLAlchemy's, and the
driver's on the SQLite fast path) become :class:`~scheduler.ledger.exceptions.LedgerError`
in the ledger's scopes (:mod:`scheduler.ledger.access`).

Group commit (:class:`EventWriter`): one writer stores every event that arrived while it
was busy. SQLite has one writer at a time, and a commit, not a row, is what costs. Requests
hand their event to :meth:`EventWriter.submit` and wait; the writer takes everything queued
so far (up to ``max_batch``) into one :func:`store_and_apply`, then wakes each waiter with
its outcome. So a request is answered only after its event is committed, and under load
many events share one commit. Other database work of the receiver (late matches, recovery,
notes) goes through :meth:`EventWriter.run`, so the receiver is always a single writer.

By default the writer runs on the receiver's own event loop (``threaded=False``): a batch
blocks the loop for about a millisecond while requests wait in the socket buffers, which
measured faster than a writer thread, whose every SQLite call must win the GIL back from a
busy loop. ``threaded=True`` keeps the loop free (``/health`` answers during a long lock
wait) at that cost."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from scheduler.core.timeutil import Clock
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.rows import UnmatchedEvent
from scheduler.tracking.apply import Applied, ApplyContext
from scheduler.tracking.intake import Incoming
from scheduler.tracking.matching import MATCHED_EVENTS, apply_and_match
from scheduler.tracking.reload import load_stored
from scheduler.tracking.store import BatchStore, TrackingStore

logger = logging.getLogger("scheduler.tracking")
T = TypeVar("T")


@dataclass
class Ingested:
    """Outcome of one batch: per event its stored id and whether it was a repeat."""

    ids: list[int | None] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    applied: Applied = field(default_factory=Applied)


def _apply(book: BatchStore, batch: list[tuple[int, Incoming]], ctx: ApplyContext,
           now: datetime, *, careful: bool) -> tuple[Applied, dict[int, str]]:
    """Apply a batch; ``careful``: event by event in savepoints. Returns (applied, errors)."""
    if not careful:
        return apply_and_match(book, batch, ctx, now), {}
    applied, errors = Applied(), {}
    for event_id, item in batch:
        try:
            with book.savepoint():
                applied.merge(apply_and_match(book, [(event_id, item)], ctx, now))
        except Exception as exc:
            logger.exception("event %s (%s) could not be applied", event_id, item.name)
            errors[event_id] = f"error: {type(exc).__name__}: {exc}"[:500]
    return applied, errors


def _finish(book: BatchStore, applied: Applied, errors: dict[int, str],
            now: datetime) -> None:
    book.mark_applied(sorted(applied.results.items()), now)
    for event_id, why in errors.items():
        book.note_result(event_id, why)


def _twice(attempt: Callable[[bool], T], what: str) -> T:
    """``attempt(careful=False)``; if anything fails, all is rolled back and it is tried
    again carefully (one event per savepoint); a second failure is raised (a database error
    as ``LedgerError``, by the attempt's scope)."""
    try:
        return attempt(False)
    except Exception as exc:
        logger.warning("%s failed (%s: %s); trying again event by event", what,
                       type(exc).__name__, exc)
        return attempt(True)


def store_and_apply(store: TrackingStore, items: Sequence[Incoming], ctx: ApplyContext,
                    now: datetime) -> Ingested:
    """Store ``items`` and apply the new ones, all in one transaction (one commit)."""
    rows: dict[str, dict] = {}
    for item in items:
        rows.setdefault(item.dedupe_key, item.row())

    def attempt(careful: bool) -> Ingested:
        out = Ingested()
        with store.batch("store events") as book:
            new = book.insert_events(list(rows.values()))
            fresh: list[tuple[int, Incoming]] = []
            for item in items:
                event_id = new.pop(item.dedupe_key, None)
                out.ids.append(event_id)
                out.duplicate.append(event_id is None)
                if event_id is not None:
                    fresh.append((event_id, item))
            if fresh:
                applied, errors = _apply(book, fresh, ctx, now, careful=careful)
                _finish(book, applied, errors, now)
                out.applied = applied
        return out

    return _twice(attempt, "store events")


def reapply(store: TrackingStore, event_ids: Sequence[int], ctx: ApplyContext,
            now: datetime) -> Applied:
    """Apply stored events again (recovery); their results are updated."""

    def attempt(careful: bool) -> Applied:
        with store.batch("apply stored events") as book:
            loaded, _ = load_stored(book, book.payloads(list(event_ids)), now)
            applied, errors = _apply(book, loaded, ctx, now, careful=careful)
            _finish(book, applied, errors, now)
            return applied

    return _twice(attempt, "apply stored events")


def apply_unapplied(store: TrackingStore, ctx: ApplyContext, now: datetime, *,
                    batch: int = 500) -> tuple[int, Applied]:
    """At start-up: apply every stored event whose ``applied_at`` is NULL (oldest first)."""
    total, after, everything = 0, 0, Applied()
    while True:
        with store.reading("read the events left unapplied") as book:
            rows = book.unapplied(after, batch)
        if not rows:
            return total, everything
        after = rows[-1].id
        everything.merge(reapply(store, [r.id for r in rows], ctx, now))
        total += len(rows)


def pending_unmatched(store: TrackingStore, *, window: int = 100_000
                      ) -> list[UnmatchedEvent]:
    """Unmatched sends and receipts among the last ``window`` events, to retry after a
    restart (a ``messages.sent`` left unmatched by an older version included)."""
    with store.reading("read stored events") as book:
        return book.recent_unmatched(window, MATCHED_EVENTS)


def note_result(store: TrackingStore, event_id: int, result: str) -> None:
    """Replace an event's result (after its call was rejected, or not)."""
    with store.batch(f"note the result of event {event_id}") as book:
        book.note_result(event_id, result)


# --------------------------------------------------------------------------- group commit


@dataclass(frozen=True, slots=True)
class Stored:
    """What a request learns once its event is committed."""

    event_id: int | None
    duplicate: bool


class EventWriter:
    """Batches submitted events into one transaction per turn of a single writer thread."""

    def __init__(self, store: TrackingStore, ctx: ApplyContext, clock: Clock, *,
                 max_batch: int = 1000, threaded: bool = False,
                 on_applied: Callable[[Applied], None] | None = None) -> None:
        self.store = store
        self.threaded = threaded
        self.ctx = ctx
        self.clock = clock
        self.max_batch = max_batch
        self.on_applied = on_applied
        self.batches = 0
        self.events = 0
        self._queue: list[tuple[Incoming, asyncio.Future[Stored]]] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False

    @property
    def pending(self) -> int:
        """Events waiting for the next commit."""
        return len(self._queue)

    def start(self) -> None:
        """Start the writer on the running loop."""
        if self.threaded:
            self._executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="event-writer")
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="event-writer")

    async def aclose(self) -> None:
        """Commit what is queued, then stop the thread."""
        self._closing = True
        if self._wake is not None:
            self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    async def submit(self, item: Incoming) -> Stored:
        """Queue ``item`` and wait until it is committed (raises what the commit raised)."""
        if self._wake is None or self._closing:
            raise LedgerError("the receiver is stopping: the event was not stored")
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        self._wake.set()
        return await future

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` as the writer (between batches)."""
        if not self.threaded:
            return fn(*args)
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            if not self._queue:
                if self._closing:
                    return
                await self._wake.wait()
                self._wake.clear()
                continue
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
            await self._write(batch)

    async def _write(self, batch: list[tuple[Incoming, asyncio.Future[Stored]]]) -> None:
        items = [item for item, _ in batch]
        try:
            result = await self.run(store_and_apply, self.store, items, self.ctx, self.clock())
        except Exception as exc:  # LedgerError (or a bug): every waiter gets it
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        self.batches += 1
        self.events += len(items)
        for (_, future), event_id, duplicate in zip(batch, result.ids, result.duplicate,
                                                    strict=True):
            if not future.done():
                future.set_result(Stored(event_id, duplicate))
        if self.on_applied is not None:
            self.on_applied(result.applied)
