"""Webhook delivery: a background queue of POSTs with retries, delays, duplicates, reordering.

The real service retries a failed delivery 7 times with back-off (5 s .. 160 s) and stops on
404 or 410; the sandbox does the same on a scaled-down schedule
(``webhook_retry_base_s * 2**n``). Workers read ``webhook_concurrency`` when they start.
Faults (``webhook_duplicate_rate``, ``webhook_delay_ms``, ``webhook_reorder``) are decided
with a seeded random stream in the order events are emitted. Account (SMS, voice) events go
through the same queue with :meth:`WebhookDispatcher.post_raw`: the exact bytes to post and
their extra headers (channel, signature).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from httpx_aiohttp import AiohttpTransport

from scheduler.sandbox.common import iso_ms, seeded
from scheduler.sandbox.config import SandboxConfig

_HEADERS = {"content-type": "application/json", "user-agent": "campaign-sandbox-webhooks"}
_STOP_STATUSES = frozenset({404, 410})


@dataclass(slots=True)
class Delivery:
    """One event bound for one URL, and which attempt this is."""

    url: str
    content: bytes
    event: str
    session_id: str | None
    attempt: int = 1
    headers: Mapping[str, str] = dataclasses.field(default_factory=lambda: _HEADERS)
    channel: str | None = None
    #: The message (or call) the event is about, for the log: which send's proof it carries.
    message_id: str | None = None


class WebhookDispatcher:
    """Posts events in the background; every attempt is logged in :attr:`log`."""

    def __init__(
        self,
        config: Callable[[], SandboxConfig],
        now: Callable[[], datetime],
        seed: int | None,
    ) -> None:
        self._config = config
        self._now = now
        self._rng = seeded(seed, "webhook-faults")
        self.log: list[dict[str, Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[Delivery] | None = None
        self._client: httpx.AsyncClient | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._timers: set[asyncio.TimerHandle] = set()
        self._held: dict[str, tuple[Delivery, asyncio.TimerHandle]] = {}
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the workers on the running loop (idempotent; called lazily as well)."""
        if self._queue is not None or self._closed:
            return
        cfg = self._config()
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        pool = cfg.webhook_concurrency * 2
        limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
        self._client = httpx.AsyncClient(
            timeout=cfg.webhook_timeout_s,
            follow_redirects=False,
            trust_env=False,
            transport=AiohttpTransport(limits=limits, trust_env=False),
        )
        self._workers = [
            self._loop.create_task(self._work(), name=f"sandbox-webhook-{n}")
            for n in range(cfg.webhook_concurrency)
        ]

    async def aclose(self) -> None:
        """Stop the workers, drop pending timers and close the HTTP client."""
        self._closed = True
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        for _, handle in self._held.values():
            handle.cancel()
        self._held.clear()
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers = []
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        self._queue = None

    # ------------------------------------------------------------------ timers

    def call_later(self, delay_s: float, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback(*args)`` after ``delay_s`` on the loop; cancelled at shutdown."""
        if self._closed:
            return
        self.start()
        assert self._loop is not None
        holder: list[asyncio.TimerHandle] = []

        def fire() -> None:
            self._timers.discard(holder[0])
            callback(*args)

        handle = self._loop.call_later(max(delay_s, 0.0), fire)
        holder.append(handle)
        self._timers.add(handle)

    # ------------------------------------------------------------------ posting

    def post(self, url: str, session_id: str, envelope: dict[str, Any]) -> None:
        """Queue ``envelope`` for ``url``, applying duplicate, delay and reorder faults."""
        content = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()
        data = envelope.get("data")
        about = None
        if isinstance(data, dict):
            about = data.get("id") or data.get("message_id") or data.get("callId")
        self.post_raw(url, content, envelope["event"], session_id=session_id,
                      message_id=str(about) if about else None)

    def post_raw(
        self,
        url: str,
        content: bytes,
        event: str,
        *,
        session_id: str | None = None,
        channel: str | None = None,
        headers: Mapping[str, str] | None = None,
        message_id: str | None = None,
    ) -> None:
        """Queue the exact bytes ``content`` (event ``event``, about ``message_id``) for
        ``url``, with ``headers`` added to the JSON ones; faults and retries as for
        :meth:`post`."""
        if self._closed:
            return
        self.start()
        cfg = self._config()
        all_headers = {**_HEADERS, **headers} if headers else _HEADERS
        duplicate = cfg.webhook_duplicate_rate and self._rng.random() < cfg.webhook_duplicate_rate
        copies = 2 if duplicate else 1
        low, high = cfg.webhook_delay_ms
        for _ in range(copies):
            delivery = Delivery(url, content, event, session_id, 1, all_headers, channel,
                                message_id)
            if high > 0:
                self.call_later(self._rng.uniform(low, high) / 1000, self._route, delivery)
            else:
                self._route(delivery)

    def _route(self, delivery: Delivery) -> None:
        """Queue now, or hold back so that the next event for the same URL overtakes it."""
        cfg = self._config()
        if cfg.webhook_reorder:
            held = self._held.pop(delivery.url, None)
            if held is not None:
                held[1].cancel()
                self._enqueue(delivery)
                self._enqueue(held[0])
                return
            if self._rng.random() < 0.5 and self._loop is not None:
                handle = self._loop.call_later(
                    cfg.webhook_reorder_hold_ms / 1000, self._release, delivery.url
                )
                self._held[delivery.url] = (delivery, handle)
                return
        self._enqueue(delivery)

    def _release(self, url: str) -> None:
        held = self._held.pop(url, None)
        if held is not None:
            self._enqueue(held[0])

    def _enqueue(self, delivery: Delivery) -> None:
        if self._queue is not None:
            self._queue.put_nowait(delivery)

    async def _work(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            delivery = await queue.get()
            try:
                await self._deliver(delivery)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug here must not kill the worker
                self._note(delivery, None, f"internal: {type(exc).__name__}")

    async def _deliver(self, delivery: Delivery) -> None:
        assert self._client is not None
        status: int | None = None
        error: str | None = None
        try:
            response = await self._client.post(
                delivery.url, content=delivery.content, headers=delivery.headers
            )
            status = response.status_code
        except httpx.HTTPError as exc:
            error = type(exc).__name__
        self._note(delivery, status, error)
        if status is not None and (200 <= status < 300 or status in _STOP_STATUSES):
            return
        cfg = self._config()
        if delivery.attempt < cfg.webhook_max_attempts:
            delay = cfg.webhook_retry_base_s * 2 ** (delivery.attempt - 1)
            retry = dataclasses.replace(delivery, attempt=delivery.attempt + 1)
            self.call_later(delay, self._enqueue, retry)

    def _note(self, delivery: Delivery, status: int | None, error: str | None) -> None:
        self.log.append(
            {
                "index": len(self.log),
                "url": delivery.url,
                "event": delivery.event,
                "sessionId": delivery.session_id,
                "channel": delivery.channel,
                "attempt": delivery.attempt,
                "messageId": delivery.message_id,
                "status": status,
                "error": error,
                "at": iso_ms(self._now()),
            }
        )
