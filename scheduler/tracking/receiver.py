"""The webhook receiver: a FastAPI app that stores every event, then applies it.

Routes:

- ``POST /webhooks/session?token=…``: per-session (WhatsApp) events. The service does not
  sign them, so the registered URL carries a secret token (``webhook_token``, else a random
  one for this process, see :func:`receiver_token`).
- ``POST /webhooks/account``: SMS and voice events, signed with ``X-DAPI-Signature`` (hex
  HMAC-SHA256 of the raw body keyed with ``webhook_secret``).
- ``GET /health``.
- ``GET /r/{token}``: a tracked link's redirect (:mod:`scheduler.links.routes`).

A request is answered 200 only after its event is committed (a repeat is answered 200 too
and changes nothing); bad input gets a 4xx with a message; a database that cannot be written
gets 503, so the service retries. The webhook paths are answered by a raw ASGI middleware
(:class:`WebhookRoutes`) because they are the hot path of figure P4.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Iterable

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from scheduler.core.httpserver import BackgroundServer
from scheduler.core.timeutil import Clock, monotonic
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.link_store import LinkStore
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore as LedgerTracking
from scheduler.links.routes import add_link_routes
from scheduler.settings.load import Settings
from scheduler.tracking import event_store, intake_counts
from scheduler.tracking.apply import Applied, ApplyContext
from scheduler.tracking.call_events import is_live_chunk
from scheduler.tracking.call_rejection import CallRejecter, ClientSource
from scheduler.tracking.event_store import EventWriter
from scheduler.tracking.intake import (
    RawRequest,
    Rejected,
    check_content_type,
    check_signature,
    check_token,
    decode_json,
    incoming_from,
    read_body,
)
from scheduler.tracking.matching import match_events
from scheduler.tracking.replies import OptOutWords
from scheduler.tracking.store import TrackingStore
from scheduler.tracking.urls import ACCOUNT_PATH, SESSION_PATH, receiver_token

logger = logging.getLogger("scheduler.tracking")

#: How long (seconds) an unmatched receipt is retried before it is left as it is, and how
#: many are remembered at most (receipts of messages sent by other means never match).
UNMATCHED_TTL_S = 900.0
UNMATCHED_MAX = 20_000
_OK = b'{"ok":true,"duplicate":false}'
_DUPLICATE = b'{"ok":true,"duplicate":true}'


#: How often a running receiver records that it still listens.
UPTIME_EVERY_S = 5.0


def _error(status: int, message: str) -> tuple[int, bytes]:
    return status, json.dumps({"ok": False, "error": message}).encode()


class LateMatches:
    """Unmatched events, matched once a delivery takes their message id (or forgotten after
    a TTL): what the receiver's sweep gives :func:`scheduler.tracking.matching.match_events`."""

    def __init__(self, ttl_s: float = UNMATCHED_TTL_S, most: int = UNMATCHED_MAX) -> None:
        self.ttl_s = ttl_s
        self.most = most
        self._waiting: dict[int, tuple[str, float]] = {}

    def add(self, pairs: Iterable[tuple[int, str]]) -> None:
        """Remember (event id, message id) pairs that matched nothing (the oldest go first
        when there are too many)."""
        now = monotonic()
        for event_id, norm in pairs:
            self._waiting.setdefault(event_id, (norm, now))
        while len(self._waiting) > self.most:
            del self._waiting[next(iter(self._waiting))]

    def __len__(self) -> int:
        return len(self._waiting)

    def due(self, held: set[str]) -> list[int]:
        """Event ids whose message id is now held; forgets those and the expired ones."""
        now = monotonic()
        ready = [i for i, (norm, _) in self._waiting.items() if norm in held]
        for event_id in ready:
            del self._waiting[event_id]
        for event_id in [i for i, (_, t) in self._waiting.items() if now - t > self.ttl_s]:
            del self._waiting[event_id]
        return ready

    def norms(self) -> list[str]:
        """The message ids still waited for."""
        return list({norm for norm, _ in self._waiting.values()})


class Receiver:
    """State of one receiver app: writer, rejecter, late matches, secrets."""

    def __init__(self, settings: Settings, store: TrackingStore,
                 client: ClientSource, clock: Clock, sweep_every_s: float) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.sweep_every_s = sweep_every_s
        self.token = receiver_token(settings).encode()
        self._secret: bytes | None = None
        self.limit = settings.max_event_bytes
        self.ctx = ApplyContext(OptOutWords(settings.opt_out_words),
                                reject_calls=settings.reject_calls)
        self.late = LateMatches()
        self.writer = EventWriter(store, self.ctx, clock, on_applied=self._after)
        self.rejecter = CallRejecter(settings, client, self._note)
        self._sweeper: asyncio.Task[None] | None = None
        self.recovered = 0
        #: Live call audio chunks received (counted, never stored).
        self.audio_chunks = 0
        #: The port the service posts to (set by whoever binds it); part of the uptime key.
        self.listen_port: int | None = None
        self._uptime_id: int | None = None
        self._uptime_touched = 0.0
        #: An event was refused since the last heartbeat (the service retries it, maybe
        #: for the last time): the next heartbeat starts a new interval, so the refusal
        #: is a break in the recorded uptime and no row sent before it is called unproven.
        self._refused = False

    @property
    def secret(self) -> bytes | None:
        """The account webhook's secret (settings, else kept in the state folder), read
        until there is one: a run may register, and so create, it after this receiver
        started."""
        if self._secret is None:
            from scheduler.tracking.identity import account_secret

            found = account_secret(self.settings)
            self._secret = found.encode() if found else None
        return self._secret

    def url_key(self) -> str:
        """A hash of where the service posts (port and token), never the token itself."""
        import hashlib

        seed = f"{self.listen_port}:".encode() + self.token
        return hashlib.sha256(seed).hexdigest()[:16]

    async def _touch_uptime(self, *, force: bool = False, stopping: bool = False) -> None:
        """Record that this receiver listens, or (``stopping``) that it stops listening now
        (see ``scheduler.dispatch.unknowns``)."""
        now = monotonic()
        if self._refused and not stopping:
            self._refused = False
            self._uptime_id = None  # the interval so far ends at its last heartbeat
            force = True
        if not force and now - self._uptime_touched < UPTIME_EVERY_S:
            return
        self._uptime_touched = now
        try:
            self._uptime_id = await self.writer.run(
                lambda: self.store.record_uptime(self._uptime_id, os.getpid(), self.url_key(),
                                                 self.clock(), stopping=stopping))
        except LedgerError as exc:
            logger.warning("could not record the receiver's uptime: %s", exc)

    def _after(self, applied: Applied) -> None:
        if applied.unmatched:
            self.late.add(applied.unmatched)
        if applied.calls:
            self.rejecter.submit(applied.calls)

    async def _note(self, event_id: int, result: str) -> None:
        try:
            await self.writer.run(event_store.note_result, self.store, event_id, result)
        except LedgerError as exc:
            logger.warning("could not note the result of event %s: %s", event_id, exc)

    async def start(self) -> None:
        """Start the writer, apply what a previous process left, start the sweeper."""
        self.writer.start()
        count, applied = await self.writer.run(event_store.apply_unapplied, self.store,
                                               self.ctx, self.clock())
        self.recovered = count
        if count:
            logger.info("applied %d stored events left unapplied", count)
        self.late.add(applied.unmatched)
        self.late.add(await self.writer.run(event_store.pending_unmatched, self.store))
        # Move everything alive at start-up (modules, models, the app) out of the cyclic
        # GC's reach: a full collection over it paused the loop up to 68 ms under load
        # (P4's p99); with the freeze the longest pause measured 3 ms. Undone at stop.
        gc.collect()
        gc.freeze()
        await self._touch_uptime(force=True)
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(),
                                                               name="late-matches")

    async def sweep(self) -> int:
        """Apply the unmatched events whose delivery now holds their message id (the one
        matching rule: :func:`scheduler.tracking.matching.match_events`); how many."""
        if not len(self.late):
            return 0
        norms, now = self.late.norms(), self.clock()
        held, applied = await self.writer.run(lambda: match_events(self.store, norms, now,
                                                                   ctx=self.ctx))
        ready = self.late.due(held)  # matched here, or by the dispatcher already
        self._after(applied)
        return len(ready)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_every_s)
            try:
                await self.sweep()
            except LedgerError as exc:
                logger.warning("late matches: %s", exc)
            await self._touch_uptime()

    async def stop(self) -> None:
        """Stop the sweeper, finish rejections, commit what is queued."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self._touch_uptime(force=True, stopping=True)
        await self.rejecter.aclose()
        await self.writer.aclose()
        gc.unfreeze()

    async def ingest(self, route: str, body: bytes) -> tuple[int, bytes]:
        """Parse, store and apply one event: (status, JSON answer)."""
        raw, text = decode_json(body)
        item = incoming_from(raw, text, self.clock(), route=route)
        if is_live_chunk(item.event):
            self.audio_chunks += 1
            return 200, _OK
        try:
            stored = await self.writer.submit(item)
        except LedgerError as exc:
            logger.error("event not stored: %s", exc)
            self._refused = True
            return _error(503, "the event could not be stored; try again later")
        return 200, (_DUPLICATE if stored.duplicate else _OK)

    async def webhook(self, path: str, request: RawRequest) -> tuple[int, bytes]:
        """``POST /webhooks/session?token=…`` or ``POST /webhooks/account`` (signed)."""
        ours = False  # the token or signature was right: a refusal may lose a real event
        try:
            if path == SESSION_PATH:
                check_token(request.query_param("token"), self.token)
                ours = True
            elif self.secret is None:
                raise Rejected(401, "account webhooks are refused: webhook_secret is not set "
                               "(and no secret is kept in the state folder)")
            check_content_type(request.header(b"content-type"))
            body = await read_body(request, self.limit)
            if path == ACCOUNT_PATH:
                check_signature(body, request.header(b"x-dapi-signature"), self.secret)
                ours = True
                return await self.ingest("account", body)
            return await self.ingest("session", body)
        except Rejected as exc:
            self._refused = self._refused or ours
            return _error(exc.status, exc.message)

    async def health(self, request: Request) -> Response:
        """``GET /health``: up, with the writer's counters."""
        return JSONResponse({"ok": True, "events": self.writer.events,
                             "batches": self.writer.batches, "pending": self.writer.pending,
                             "waiting_matches": len(self.late), "recovered": self.recovered,
                             "audio_chunks": self.audio_chunks})


class WebhookRoutes:
    """ASGI middleware answering the two webhook paths itself, before any routing.

    They are the hot path of figure P4: raw ASGI saves FastAPI's routing, exception and
    exit-stack layers on every event. Every other path goes on to the FastAPI app.
    """

    def __init__(self, app: ASGIApp, receiver: Receiver) -> None:
        self.app = app
        self.receiver = receiver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle ``POST`` to a webhook path; pass everything else on."""
        path = scope.get("path")
        if scope["type"] != "http" or path not in (SESSION_PATH, ACCOUNT_PATH):
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"application/json")]
        if scope["method"] != "POST":
            status, body = _error(405, "use POST")
            headers.append((b"allow", b"POST"))
        else:
            started = monotonic()
            status, body = await self.receiver.webhook(path, RawRequest(scope, receive))
            intake_counts.observe(path, status, monotonic() - started)  # /metrics' intake counters
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def create_receiver(settings: Settings, ledger: Ledger, *, client: ClientSource = None,
                    clock: Clock | None = None, sweep_every_s: float = 1.0) -> FastAPI:
    """The receiver app over ``ledger``.

    ``client`` rejects calls when ``reject_calls`` is on: a ``ServiceClient`` (the receiver
    uses a twin of it, same address and key, on its own loop, so the caller's client stays
    on the caller's loop), or a factory called on the receiver's loop; by default one is
    made from the settings when a service is configured.
    """
    receiver = Receiver(settings, LedgerTracking(ledger), client, clock or ledger.clock,
                        sweep_every_s)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await receiver.start()
        try:
            yield
        finally:
            await receiver.stop()

    app = FastAPI(title="campaign webhook receiver", lifespan=lifespan, docs_url=None,
                  redoc_url=None, openapi_url=None)
    app.state.receiver = receiver
    app.add_middleware(WebhookRoutes, receiver=receiver)
    app.router.add_route("/health", receiver.health, methods=["GET"])
    add_link_routes(app, settings, LinkStore(ledger.engine), receiver.clock,
                    receiver.writer.run)
    return app


def start_receiver(settings: Settings, ledger: Ledger, client: ClientSource = None, *,
                   host: str | None = None, port: int | None = None,
                   sock: socket.socket | None = None) -> BackgroundServer:
    """Serve the receiver in a background thread: on ``sock`` (bound beforehand, see
    :func:`scheduler.tracking.identity.bind_receiver_socket`), else on ``host:port``, else
    on the project's receiver port."""
    app = create_receiver(settings, ledger, client=client)
    if sock is None and port is None:
        from scheduler.tracking.identity import bind_receiver_socket

        sock = bind_receiver_socket(settings)
    server = BackgroundServer(app, host=host or settings.receiver_host,
                              port=port or 0, sock=sock)
    app.state.receiver.listen_port = sock.getsockname()[1] if sock is not None else port
    return server.start()

