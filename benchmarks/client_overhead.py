"""Figure P0: client CPU per send, as a ratio to a bare aiohttp loop measured in the same run.

The sandbox (``campaign sandbox``) runs in another process; this process measures only its
own CPU time (``time.process_time``: user + system, all threads) per send, at concurrency
1, 8 and 64, for:

- ``bare``: an aiohttp session posting the same JSON and reading the JSON answer;
- ``aiohttp``: ``ServiceClient.send_prepared`` with the default aiohttp transport;
- ``httpx``: ``ServiceClient.send_prepared`` with httpx's own transport;
- ``typed``: ``ServiceClient.send_text`` (validates the body model first), aiohttp transport.

Variants are interleaved over several rounds and the median kept. One JSON object per line
on stdout: ``{"figure": "P0", "value": <client/bare>, "unit": "ratio", ...}``. Bars: value
<= 2 at concurrency 64 (aiohttp transport); goal <= 1.2. ``--quick`` shrinks the sizes;
``--server stub`` uses a minimal aiohttp server instead of the sandbox.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from _harness import free_port, log

from scheduler.service.client import ServiceClient
from scheduler.service.requests import SEND_KINDS

KEY = "bench-key-0123456789"
PATH = SEND_KINDS["text"].path
TO = "5511999990000"
TEXT = "Olá {name}! Sua oferta exclusiva chegou: 20% de desconto até domingo. Responda SAIR."
CONCURRENCIES = (1, 8, 64)
VARIANTS = ("bare", "aiohttp", "httpx", "typed")
Send = Callable[[dict[str, Any]], Awaitable[Any]]


# --------------------------------------------------------------------------- servers


async def _stub_handler(request: Any) -> Any:
    from aiohttp import web

    await request.read()
    body = {"success": True, "message": "Message sent", "messageId": "3EB0C0FFEE",
            "timestamp": int(time.time() * 1000), "status": "sent"}
    return web.json_response(body)


def serve_stub(port: int) -> None:
    """A minimal aiohttp server answering every send like the service (``--serve-stub``)."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/api/v1/{tail:.*}", _stub_handler)
    app.router.add_get("/sandbox/health", lambda r: _health())
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def _health() -> Any:
    from aiohttp import web

    return web.json_response({"ok": True})


def start_server(kind: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``campaign sandbox`` (or the stub) in another process; answer it and its URL."""
    port = free_port()
    if kind == "sandbox":
        cmd = [sys.executable, "-c", "from scheduler.cli import main; main()", "sandbox",
               "--port", str(port), "--api-key", KEY, "--seed", "1", "--reply-rate", "0"]
    else:
        cmd = [sys.executable, __file__, "--serve-stub", str(port)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[1])
    base_url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base_url, timeout=2) as http:
        for _ in range(300):
            if proc.poll() is not None:
                break
            try:
                http.get("/sandbox/health").raise_for_status()
                return proc, base_url
            except httpx.HTTPError:
                time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the {kind} server did not start")


class Sessions:
    """Connected sandbox sessions, one per measurement (plan limits are per session)."""

    def __init__(self, base_url: str, kind: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=10, headers={"Authorization": KEY})
        self.kind = kind
        self.count = 0

    def new(self) -> str:
        """A new connected session id (any id on the stub)."""
        self.count += 1
        session_id = f"bench-{self.count}"
        if self.kind == "sandbox":
            self.http.post("/api/v1/sessions",
                           json={"sessionId": session_id, "type": "unofficial"}).raise_for_status()
            self.http.post(f"/sandbox/sessions/{session_id}/scan").raise_for_status()
        return session_id


# --------------------------------------------------------------------------- measuring


async def drive(send: Send, body: dict[str, Any], sends: int, concurrency: int) -> None:
    """``sends`` sends through ``concurrency`` workers."""
    remaining = iter(range(sends))

    async def worker() -> None:
        for _ in remaining:
            await send(body)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def measure(variant: str, base_url: str, body: dict[str, Any], sends: int,
                  concurrency: int) -> dict[str, float]:
    """CPU µs and wall µs per send of one variant (after a warm-up that fills the pool)."""
    url = base_url + PATH
    if variant == "bare":
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
        headers = {"Authorization": KEY}

        async def send(payload: dict[str, Any]) -> Any:
            async with session.post(url, json=payload, headers=headers) as response:
                content = await response.read()
                if response.status != 200:
                    raise RuntimeError(f"HTTP {response.status}: {content[:200]!r}")
                return json.loads(content)

        close: Callable[[], Awaitable[None]] = session.close
    else:
        transport = "httpx" if variant == "httpx" else "aiohttp"
        client = ServiceClient(base_url, KEY, concurrency=concurrency, transport=transport)
        if variant == "typed":
            sid, to, text = body["sessionId"], body["to"], body["text"]

            async def send(payload: dict[str, Any]) -> Any:
                return await client.send_text(sid, to, text)
        else:

            async def send(payload: dict[str, Any]) -> Any:
                return await client.send_prepared(PATH, payload)

        close = client.aclose
    try:
        await drive(send, body, max(200, concurrency * 4), concurrency)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await drive(send, body, sends, concurrency)
        cpu1, wall1 = time.process_time(), time.perf_counter()
    finally:
        await close()
    return {"cpu_us": 1e6 * (cpu1 - cpu0) / sends, "wall_us": 1e6 * (wall1 - wall0) / sends}


async def run(args: argparse.Namespace, base_url: str, sessions: Sessions) -> None:
    """Measure every variant at every concurrency and print the P0 lines."""
    for concurrency in CONCURRENCIES:
        results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        for round_no in range(args.rounds):
            for variant in VARIANTS:
                body = {"sessionId": sessions.new(), "to": TO, "text": TEXT}
                sends = args.sends if variant != "httpx" else max(200, args.sends // 4)
                result = await measure(variant, base_url, body, sends, concurrency)
                result["sends"] = sends
                results[variant].append(result)
                log(f"c={concurrency:<3} round {round_no + 1}/{args.rounds} {variant:<8}"
                    f" {result['cpu_us']:8.1f} µs CPU/send  {result['wall_us']:8.1f} µs wall")
        bare = statistics.median(r["cpu_us"] for r in results["bare"])
        for variant in VARIANTS[1:]:
            cpu = statistics.median(r["cpu_us"] for r in results[variant])
            print(json.dumps({
                "figure": "P0",
                "value": round(cpu / bare, 3),
                "unit": "ratio",
                "concurrency": concurrency,
                "client_us_per_send": round(cpu, 1),
                "bare_us_per_send": round(bare, 1),
                "transport": "httpx" if variant == "httpx" else "aiohttp",
                "method": "send_text" if variant == "typed" else "send_prepared",
                "sends": sum(int(r["sends"]) for r in results[variant]),
                "rounds": args.rounds,
                "server": args.server,
                "headline": concurrency == 64 and variant == "aiohttp",
            }), flush=True)


def main() -> None:
    """Parse the flags, start the server in another process, measure, stop it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--sends", type=int, default=None, help="sends per measurement")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--server", choices=("sandbox", "stub"),
                        default="sandbox", help="what answers the sends (another process)")
    parser.add_argument("--serve-stub", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stub is not None:
        serve_stub(args.serve_stub)
        return
    args.sends = args.sends or (600 if args.quick else 5000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    proc, base_url = start_server(args.server)
    try:
        sessions = Sessions(base_url, args.server)
        try:
            asyncio.run(run(args, base_url, sessions))
        finally:
            sessions.http.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
