"""Figure O1 (issue 34): outgoing webhooks delivered per second, and an idle loop's turn.

Writes ``--events`` run events into the outbox of a fresh ledger (``--url``, default a
temporary SQLite file; a PostgreSQL admin URL's database is used as it is, its outbox
emptied first), then one :class:`~scheduler.webhooks_out.worker.WebhookWorker` (one
subscription, batch ``--batch``) gives them out and delivers them, signed, to a receiver on
loopback (a threaded ``http.server`` in this process, answering 204): the wall time to
drain, ``--repeat`` rounds, median. Then the turn of a loop with nothing to do (two index
reads), median of 200 after a warm-up.

Prints JSON lines::

    {"figure": "O1", "what": "events delivered per second", "database": "sqlite",
     "events": 2000, "batch": 20, "value": <events/s>, "unit": "events/s", "rounds": [...]}
    {"figure": "O1", "what": "an idle loop's turn", "database": "sqlite", "value": <ms>,
     "unit": "ms", "min_ms": ..., "max_ms": ..., "repeat": 200}
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _harness import emit, log, median_ms

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a batch's connections at once (the default backlog is 5)


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


def _write_events(engine: Any, n: int) -> None:
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger import access, outbox
    from scheduler.outbox.events import RunData

    now = utcnow()
    for start in range(0, n, 100):
        with access.transaction(engine, "write benchmark events") as conn:
            for i in range(start, min(n, start + 100)):
                outbox.emit(conn, "run.completed", RunData(
                    run_id=i + 1, campaign="bench", channel="whatsapp", status="completed",
                    previous_status="running", reason="every delivery is settled", at=now),
                    now, run_id=i + 1)


def _empty(engine: Any) -> None:
    from scheduler.ledger import access
    from scheduler.ledger.queries import outbox as oq

    with access.transaction(engine, "empty the outbox") as conn:
        conn.execute(oq.outbox_deliveries.delete())  # benchmark set-up, not the product
        conn.execute(oq.outbox_events.delete())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="the ledger (default: a temporary SQLite)")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 events, one round")
    args = parser.parse_args()
    if args.quick:
        args.events, args.repeat = 200, 1

    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.outbox_store import OutboxStore
    from scheduler.settings.webhooks import WebhookDelivery, WebhookSubscription
    from scheduler.webhooks_out.worker import WebhookWorker

    server = _Server(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_ledger(args.url or f"sqlite:///{Path(tmp) / 'o1.db'}")
        database = engine.dialect.name
        sub = WebhookSubscription(url=url, events=("run.completed",), secret=SECRET)
        worker = WebhookWorker(OutboxStore(engine), [sub], WebhookDelivery(batch=args.batch))

        async def drain() -> None:
            async with worker.client() as client:
                while await worker.deliver_due(client):
                    pass

        rounds = []
        for r in range(args.repeat):
            _empty(engine)
            _write_events(engine, args.events)
            began = time.perf_counter()
            asyncio.run(drain())
            took = time.perf_counter() - began
            rounds.append(round(args.events / took, 1))
            log(f"round {r + 1}: {args.events} events in {took:.2f} s")
        emit({"figure": "O1", "what": "events delivered per second", "database": database,
              "events": args.events, "batch": args.batch,
              "value": statistics.median(rounds), "unit": "events/s", "rounds": rounds})

        async def idle_turns() -> dict[str, float]:
            async with worker.client() as client:
                loop = asyncio.get_running_loop()
                # one turn, timed inside the loop the worker runs in (as serve's)
                return await loop.run_in_executor(None, lambda: median_ms(
                    lambda: asyncio.run_coroutine_threadsafe(
                        worker.deliver_due(client), loop).result(), 200))

        emit({"figure": "O1", "what": "an idle loop's turn", "database": database,
              **asyncio.run(idle_turns()), "unit": "ms"})
        _empty(engine)
        engine.dispose()
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
