"""Figure P4: webhook events stored and applied per second (SQLite), and answer latency.

This process holds a SQLite ledger (a file in a temporary folder) with one run whose
deliveries were accepted with message ids, and serves the receiver (uvicorn on loopback,
in a background thread, as ``campaign run`` does). A load generator in ANOTHER process
(multiprocessing, spawn) posts realistic ``messages.sent``, ``message.delivered`` and
``message.read`` events for those deliveries with aiohttp at a fixed concurrency and times
every answer. A 200 is given only after the event is committed, so the rate is events
stored *and* applied per second; the ledger is checked at the end (every event stored,
every delivery ``read``).

One JSON object per line on stdout: ``{"figure": "P4", "value": <events/s>, "unit":
"events/s", "p50_ms", "p99_ms", "events", "concurrency", "receiver_cpu_us_per_event",
"http", ...}``, one line per concurrency (16, 32, 64). Bars: >= 1,000 events/s with p99 <=
100 ms; goal >= 5,000/s. ``--quick`` shrinks the run; ``--http h11`` measures uvicorn's
pure-Python parser (what an install without ``httptools`` gets). The load generator shares
the machine's cores with the receiver: on a small machine the figure is CPU-bound, and
``receiver_cpu_us_per_event`` is the steadier number to compare changes by.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _harness import log, number
from sqlalchemy import func, select, update

from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.tracking import session_webhook_url, start_receiver

TOKEN = "bench-token-0123456789abcdef"
SESSION = "bench-sender"
OWN_JID = "5511987650000@s.whatsapp.net"
T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def message_id(i: int) -> str:
    """The message id the service gave delivery ``i`` (upper case, as events carry it)."""
    return f"3EB0{i:018X}"


# --------------------------------------------------------------------------- ledger


def build_ledger(path: Path, deliveries: int) -> tuple[Ledger, int]:
    """A ledger with one run of ``deliveries`` text messages, all accepted with an id."""
    ledger = Ledger(open_ledger(f"sqlite:///{path}"))
    run_id = ledger.create_run(campaign_name="p4", channel="whatsapp", definition_path="p4",
                               definition={}, delivery_mode="at-most-once", timezone="UTC")
    rows = [{"row": i, "to": number(i), "step": 0, "kind": "text",
             "path": "/api/v1/messages/send/text", "payload": {"text": f"Olá {i}"},
             "state": "planned"} for i in range(deliveries)]
    ledger.store_plan(run_id, [rows], start_at=T0)
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        conn.execute(update(d).where(d.c.run_id == run_id).values(
            state="accepted", sender=SESSION, dispatched_at=T0, accepted_at=T0,
            message_id=func.printf("3eb0%018X", d.c.row),
            message_id_norm=func.printf("3eb0%018x", d.c.row)))
    return ledger, run_id


# --------------------------------------------------------------------------- load (child)


def events_for(i: int) -> list[dict[str, Any]]:
    """The three events of delivery ``i``: sent, delivered, read (realistic payloads)."""
    sent_ms = int((T0 + timedelta(seconds=i % 3600)).timestamp() * 1000)
    jid = f"{number(i)}@s.whatsapp.net"
    sent = {
        "event": "messages.sent", "sessionId": SESSION,
        "timestamp": datetime.fromtimestamp(sent_ms / 1000, UTC).isoformat(),
        "traceId": f"{i:016x}",
        "data": {"id": message_id(i), "type": "text",
                 "message": f"Olá {i}! Sua oferta exclusiva chegou: 20% de desconto até "
                            "domingo. Responda SAIR para não receber mais.",
                 "timestamp": sent_ms, "fromMe": True, "is_group": False, "group_name": "",
                 "from": {"jid": OWN_JID, "name": "Loja"}, "from_name": "Loja",
                 "to": {"jid": jid, "name": f"Cliente {i}"}, "media_url": None},
    }
    receipts = []
    for name, delay in (("message.delivered", 2_000), ("message.read", 30_000)):
        receipts.append({"event": name, "sessionId": SESSION,
                         "timestamp": datetime.fromtimestamp((sent_ms + delay) / 1000,
                                                             UTC).isoformat(),
                         "traceId": f"{i:015x}{len(receipts)}",
                         "data": {"message_id": message_id(i), "remote_jid": jid,
                                  "timestamp": sent_ms + delay}})
    return [sent, *receipts]


async def _load(url: str, deliveries: int, concurrency: int) -> dict[str, Any]:
    import aiohttp

    bodies = [json.dumps(e).encode() for i in range(deliveries) for e in events_for(i)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    headers = {"content-type": "application/json"}
    next_index = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal next_index
            while next_index < len(bodies):
                body = bodies[next_index]
                next_index += 1
                started = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                latencies.append(time.perf_counter() - started)
                statuses[response.status] = statuses.get(response.status, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {"elapsed": elapsed, "latencies": latencies, "statuses": statuses}


def load_child(url: str, deliveries: int, concurrency: int, out: Any) -> None:
    """Child process: post every event, send back timings."""
    out.send(asyncio.run(_load(url, deliveries, concurrency)))
    out.close()


# --------------------------------------------------------------------------- measure


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def measure(deliveries: int, concurrency: int, folder: Path) -> dict[str, Any]:
    """One measurement at ``concurrency``; returns the figure's JSON object."""
    ledger, run_id = build_ledger(folder / f"p4-{concurrency}.db", deliveries)
    settings = Settings(webhook_token=TOKEN, state_dir=folder)
    server = start_receiver(settings, ledger, port=0)
    try:
        url = session_webhook_url(settings, server)
        context = mp.get_context("spawn")
        here, there = context.Pipe(duplex=False)
        child = context.Process(target=load_child, args=(url, deliveries, concurrency, there))
        cpu = time.process_time()
        child.start()
        result = here.recv()
        cpu = time.process_time() - cpu
        child.join()
        stats = server.app.state.receiver.writer
        batches, written = stats.batches, stats.events
    finally:
        server.stop()
    with ledger.engine.connect() as conn:
        stored = conn.execute(select(func.count()).select_from(tables.events)).scalar()
        states = dq.counts_by_state(conn, run_id)
    ledger.engine.dispose()
    events = len(result["latencies"])
    latencies = result["latencies"]
    ok = result["statuses"].get(200, 0)
    return {
        "figure": "P4", "value": round(events / result["elapsed"], 1), "unit": "events/s",
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2),
        "events": events, "concurrency": concurrency, "deliveries": deliveries,
        "answered_200": ok, "stored": stored, "read": states.get("read", 0),
        "mean_batch": round(written / batches, 1) if batches else 0,
        "receiver_cpu_us_per_event": round(cpu / events * 1e6, 1),
        "database": "sqlite (WAL, synchronous=NORMAL)",
    }


def http_parser(choice: str) -> str:
    """Make uvicorn's ``auto`` HTTP protocol ``choice``; the name of the parser in use."""
    import uvicorn.config

    if choice == "h11":
        uvicorn.config.HTTP_PROTOCOLS["auto"] = uvicorn.config.HTTP_PROTOCOLS["h11"]
        return "h11"
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


def main() -> None:
    """Parse arguments, run the measurements, print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--deliveries", type=int, default=None,
                        help="deliveries (3 events each)")
    parser.add_argument("--concurrency", type=int, action="append", default=None,
                        help="concurrent connections of the load generator (repeatable)")
    parser.add_argument("--http", choices=("auto", "h11"), default="auto",
                        help="uvicorn's HTTP parser: auto (httptools when installed) or h11 "
                             "(what an install without httptools gets)")
    args = parser.parse_args()
    http = http_parser(args.http)
    deliveries = args.deliveries or (1_000 if args.quick else 10_000)
    concurrencies = args.concurrency or ([32] if args.quick else [16, 32, 64])
    with tempfile.TemporaryDirectory(prefix="p4-") as tmp:
        for concurrency in concurrencies:
            log(f"P4: {deliveries * 3} events at concurrency {concurrency} ...")
            figure = measure(deliveries, concurrency, Path(tmp)) | {"http": http}
            if figure["stored"] != figure["events"] or figure["read"] != deliveries:
                log(f"P4: ledger check FAILED: {figure}")
            print(json.dumps(figure), flush=True)


if __name__ == "__main__":
    main()
