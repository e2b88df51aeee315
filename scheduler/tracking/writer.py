"""Group commit: one writer stores every event that arrived while it was busy.

SQLite has one writer at a time, and a commit, not a row, is what costs. Requests hand
their event to :meth:`EventWriter.submit` and wait; the writer takes everything queued so
far (up to ``max_batch``) into one transaction, then wakes each waiter with its outcome.
So a request is answered only after its event is committed, and under load many events
share one commit. Other database work of the receiver (late matches, recovery, notes) goes
through :meth:`EventWriter.run`, so the receiver is always a single writer.

By default the writer runs on the receiver's own event loop (``threaded=False``): a batch
blocks the loop for about a millisecond while requests wait in the socket buffers, which
measured faster than a writer thread, whose every SQLite call must win the GIL back from a
busy loop. ``threaded=True`` keeps the loop free (``/health`` answers during a long lock
wait) at that cost."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from scheduler.core.timeutil import Clock
from scheduler.ledger.exceptions import LedgerError
from scheduler.tracking.apply import Applied, ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import Incoming
from scheduler.tracking.store import TrackingStore

T = TypeVar("T")


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
