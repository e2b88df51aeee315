"""An SMS dispatcher process that kills itself with SIGKILL right after a bulk's answer, before
the answer is committed (crash tests of ``test_bulk_crash``).

Usage: python -m tests.channels.crash_child DB_URL BASE_URL API_KEY RUN_ID N MODE

Dies when the ``N``-th ``sms/bulk`` request has been answered; ``MODE`` is the run's delivery
mode (``at-most-once`` or ``at-least-once``). Bulks of ten, one at a time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any, cast

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from scheduler.settings.run import DeliveryMode
from tests.engine import dispatcher_for

BATCH = 10


class CrashingClient:
    """The real client; the process dies once the ``n``-th request has its answer."""

    def __init__(self, client: ServiceClient, n: int) -> None:
        self.client, self.n, self.calls = client, n, 0

    async def post_prepared(self, path: str, body: dict[str, Any], model: Any) -> Any:
        """Send, and die after the ``n``-th answer (no commit, no cleanup)."""
        result = await self.client.post_prepared(path, body, model)
        self.calls += 1
        if self.calls == self.n:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    async def send_prepared(self, path: str, body: dict[str, Any]) -> Any:
        """Not used by the SMS channel."""
        raise AssertionError(f"unexpected send_prepared({path})")

    async def get_limits(self, session_id: str) -> Any:
        """The real client's (not used by the SMS channel)."""
        return await self.client.get_limits(session_id)


def options(mode: str) -> DispatchOptions:
    """The options of the child and of the test's restart: one bulk of ten at a time."""
    return DispatchOptions(senders=("account",), rate=1000.0,
                           delivery_mode=cast(DeliveryMode, mode),
                           batch_size=BATCH,
                           engine=EngineSettings(send_concurrency=1))


async def main(db_url: str, base_url: str, api_key: str, run_id: int, n: int,
               mode: str) -> None:
    ledger = Ledger(open_ledger(db_url))
    opts = options(mode)
    async with ServiceClient(base_url, api_key) as real:
        dispatcher = dispatcher_for(ledger, CrashingClient(real, n), run_id, opts,
                                    channel="sms")
        await dispatcher.run()


if __name__ == "__main__":
    db, url, key, run, count, delivery = sys.argv[1:7]
    asyncio.run(main(db, url, key, int(run), int(count), delivery))
