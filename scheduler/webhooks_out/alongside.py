"""The outbox's loop beside a foreground run (``campaign run`` / ``resume``): started with
the dispatch, stopped at its end after one more try of what is due (a few seconds at most;
what still fails waits, durable, for the next process)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console

from scheduler.webhooks_out.worker import WebhookWorker, worker_for

if TYPE_CHECKING:
    from scheduler.ledger.access import Engine
    from scheduler.settings.load import Settings

#: How long a run's end waits for its last events' POSTs at most.
FLUSH_S = 10.0


class Alongside:
    """A running :class:`WebhookWorker` loop and how to end it."""

    def __init__(self, worker: WebhookWorker, console: Console) -> None:
        self.worker = worker
        self.stop = asyncio.Event()
        self.console = console
        self.task = asyncio.create_task(worker.run(self.stop, on_error=self._say))

    def _say(self, line: str) -> None:
        self.console.print(line, style="yellow", markup=False, highlight=False)

    async def finish(self) -> None:
        """Stop the loop, then try what is due (the run's last events) for a moment; a
        ledger error is said (the run has ended as it did; the events wait, durable)."""
        from scheduler.core.errors import SchedulerError

        self.stop.set()
        await self.task
        try:
            await self.worker.flush(min(FLUSH_S, 2 * self.worker.delivery.timeout_s))
        except SchedulerError as exc:
            self._say(f"outgoing webhooks: {exc}")


@contextlib.contextmanager
def outgoing_webhooks(settings: Settings, engine: Engine,
                      console: Console) -> Iterator[Alongside | None]:
    """The loop for the time of the block (no ``[[webhooks]]``: None); an error or Ctrl-C
    cancels it, the events waiting in the ledger."""
    worker = worker_for(engine, settings)
    if worker is None:
        yield None
        return
    loop = Alongside(worker, console)
    try:
        yield loop
    finally:
        loop.stop.set()
        if not loop.task.done():
            loop.task.cancel()
