"""The delivery loop: give new events out to the subscriptions, claim due deliveries,
POST them signed, record each try, until stopped.

``campaign serve`` keeps one while it serves; ``campaign run`` and ``campaign resume`` keep
one while they dispatch (and try what is due once more before they exit). Any live process
with the same ``[[webhooks]]`` delivers any event: the claim (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL, one writer on SQLite) gives each due row to one of them at a time. A process
killed between the claim and the record leaves its rows due again after the claim's lease
(twice the POST's time limit): the event is sent again with the same ``webhook-id``
(at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import httpx

from scheduler.core.timeutil import Clock, utcnow
from scheduler.ledger.outbox_store import Claimed, OutboxStore
from scheduler.settings.webhooks import WebhookDelivery, WebhookSubscription
from scheduler.webhooks_out.backoff import next_attempt
from scheduler.webhooks_out.post import PostTry, post
from scheduler.webhooks_out.signing import headers
from scheduler.webhooks_out.stuck import StuckWatch

if TYPE_CHECKING:
    from scheduler.ledger.access import Engine
    from scheduler.settings.load import Settings

#: A claimed row is kept from other workers for this many POST time limits.
CLAIM_LEASES = 2
#: Events given out to the subscriptions per transaction.
GIVE_OUT_BATCH = 500
#: How often a loop without subscriptions gives events out (to nobody) and prunes.
IDLE_POLL_S = 60.0
#: Events are kept this many horizons after they were written (then pruned once settled).
KEEP_HORIZONS = 7


def body_of(claimed: Claimed) -> str:
    """The JSON body of a delivery: ``{"type", "timestamp", "data"}`` (the same every try)."""
    return json.dumps({"type": claimed.type, "timestamp": claimed.created_at.isoformat(),
                       "data": json.loads(claimed.payload)},
                      ensure_ascii=False, separators=(",", ":"))


class WebhookWorker:
    """Delivers the outbox to ``subscriptions`` (see the module's text)."""

    def __init__(self, store: OutboxStore, subscriptions: Sequence[WebhookSubscription],
                 delivery: WebhookDelivery, *, clock: Clock = utcnow,
                 draw: Callable[[], float] = random.random,
                 transport: httpx.AsyncBaseTransport | None = None,
                 wall: Clock = utcnow) -> None:
        self.store = store
        self.subscriptions = {sub.key: sub for sub in subscriptions}
        self.delivery = delivery
        self.clock = clock
        self.draw = draw
        self.transport = transport
        #: The signature's time: the real moment of the POST (a receiver refuses one more
        #: than five minutes off), even when ``clock`` is a simulated one.
        self.wall = wall
        self.pruned_at: datetime | None = None
        #: Notices ``run.stuck`` (set by :func:`worker_for` when a subscription takes it).
        self.stuck: StuckWatch | None = None

    def give_out(self) -> int:
        """Give one batch of new events their delivery rows (one per subscription taking
        the type; none for an event older than the horizon); how many events."""
        now = self.clock()
        oldest = now - self.delivery.horizon
        return self.store.give_out(GIVE_OUT_BATCH, lambda kind, at: [
            key for key, sub in self.subscriptions.items() if at >= oldest and sub.wants(kind)],
            now)

    def claim(self) -> list[Claimed]:
        """Take the due deliveries of this process's subscriptions (one batch)."""
        now = self.clock()
        until = now + timedelta(seconds=CLAIM_LEASES * self.delivery.timeout_s)
        return self.store.claim(now, until, self.delivery.batch, self.subscriptions)

    async def _send(self, client: httpx.AsyncClient, claimed: Claimed) -> PostTry:
        sub = self.subscriptions[claimed.subscription]
        body = body_of(claimed)
        return await post(client, sub.url, body, headers(
            sub.secret.get_secret_value(), claimed.msg_id, self.wall(), body))

    def record(self, tries: Sequence[tuple[Claimed, PostTry]]) -> None:
        """Write each try's outcome: delivered, due again after its back-off, or failed."""
        now = self.clock()
        d = self.delivery
        self.store.record(now, [(claimed.id, outcome.status, outcome.error, outcome.delivered,
                                 None if outcome.delivered else next_attempt(
                                     claimed.attempts + 1, claimed.created_at, now,
                                     first_s=d.first_retry_s, max_s=d.max_retry_s,
                                     horizon=d.horizon, draw=self.draw))
                                for claimed, outcome in tries])

    async def deliver_due(self, client: httpx.AsyncClient) -> int:
        """Give new events out, then claim, POST and record one batch; how many tried."""
        waiting, due = self.store.has_work(self.clock(), self.subscriptions)
        if waiting:
            self.give_out()
        elif not due:
            return 0
        claimed = self.claim()
        if not claimed:
            return 0
        outcomes = await asyncio.gather(*(self._send(client, c) for c in claimed))
        self.record(list(zip(claimed, outcomes, strict=True)))
        return len(claimed)

    def prune(self) -> None:
        """Now and then: drop settled events older than :data:`KEEP_HORIZONS` horizons."""
        now = self.clock()
        if self.pruned_at is not None and now - self.pruned_at < timedelta(hours=1):
            return
        self.pruned_at = now
        self.store.prune(now - KEEP_HORIZONS * self.delivery.horizon)

    def client(self) -> httpx.AsyncClient:
        """The HTTP client of the loop (the POST's time limit; no redirects followed)."""
        return httpx.AsyncClient(timeout=self.delivery.timeout_s, transport=self.transport,
                                 follow_redirects=False)

    async def run(self, stop: asyncio.Event, *, poll_s: float = 1.0,
                  on_error: Callable[[str], None] | None = None) -> None:
        """Deliver until ``stop`` is set: a full batch is followed at once by the next,
        otherwise the loop waits ``poll_s``. A ledger error is said (``on_error``) and
        the loop goes on."""
        from scheduler.core.errors import SchedulerError

        if not self.subscriptions:  # only giving out and pruning: now and then
            poll_s = max(poll_s, IDLE_POLL_S)
        async with self.client() as client:
            while not stop.is_set():
                tried = 0
                try:
                    if self.stuck is not None:
                        self.stuck.tick(self.clock())
                    tried = await self.deliver_due(client)
                    self.prune()
                except SchedulerError as exc:
                    if on_error is not None:
                        on_error(f"outgoing webhooks: {exc}")
                if tried >= self.delivery.batch:
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll_s)

    async def flush(self, within_s: float) -> None:
        """Try what is due now, batch after batch, for at most ``within_s`` seconds (a
        foreground run before it exits; what fails waits for the next process)."""
        async with self.client() as client:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within_s):
                    while await self.deliver_due(client):
                        pass


def worker_for(engine: Engine, settings: Settings, *,
               idle_too: bool = False) -> WebhookWorker | None:
    """The delivery loop of these settings (None: no ``[[webhooks]]``). ``idle_too``
    (``campaign serve``): a loop even without subscriptions, which gives the events out to
    nobody and prunes them, so that an outbox nobody subscribes to does not grow."""
    if not settings.webhooks and not idle_too:
        return None
    store = OutboxStore(engine)
    worker = WebhookWorker(store, settings.webhooks, settings.webhook_delivery)
    if any(sub.wants("run.stuck") for sub in settings.webhooks):
        worker.stuck = StuckWatch(store, settings)
    return worker
