"""A dispatcher process that kills itself with SIGKILL at a chosen point (crash tests).

Usage: python -m tests.dispatch.crash_child DB_URL BASE_URL API_KEY RUN_ID POINT N

POINT is one of ``after_claim`` (claim committed, no HTTP call yet), ``before_http`` (in the
client, before the request), ``after_http`` (the service answered, outcome not committed),
``after_commit`` (outcomes committed); N is the send at which to die.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from tests.engine import dispatcher_for


def die() -> None:
    """The crash: no cleanup, no flush, no finally."""
    os.kill(os.getpid(), signal.SIGKILL)


class CrashingClient:
    """Wraps the real client; dies before or after the N-th request."""

    def __init__(self, client: ServiceClient, point: str, n: int) -> None:
        self.client, self.point, self.n, self.calls = client, point, n, 0

    async def send_prepared(self, path: str, body: dict[str, Any]) -> Any:
        self.calls += 1
        if self.point == "before_http" and self.calls == self.n:
            die()
        result = await self.client.send_prepared(path, body)
        if self.point == "after_http" and self.calls == self.n:
            die()
        return result


async def main(db_url: str, base_url: str, api_key: str, run_id: int, point: str,
               n: int) -> None:
    ledger = Ledger(open_ledger(db_url))
    options = DispatchOptions(senders=("s1",), rate=50.0,
                              engine=EngineSettings(send_concurrency=1))
    async with ServiceClient(base_url, api_key) as real:
        client = CrashingClient(real, point, n)
        dispatcher = dispatcher_for(ledger, client, run_id, options)
        claims = {"n": 0}
        if point == "after_claim":
            original = dispatcher.claims.claim_ready

            def claim_then_die(now: Any) -> Any:
                result = original(now)
                claims["n"] += result[0]
                if claims["n"] >= n:
                    die()
                return result

            dispatcher.claims.claim_ready = claim_then_die  # type: ignore[method-assign]
        elif point == "after_commit":
            def progress(counts: dict[str, int]) -> None:
                if counts.get("accepted", 0) >= n:
                    die()

            dispatcher.ctx.setup.on_progress = progress
        await dispatcher.run()


if __name__ == "__main__":
    db, url, key, run, where, count = sys.argv[1:7]
    asyncio.run(main(db, url, key, int(run), where, int(count)))
