"""What ``campaign webhooks`` and the dashboard show: the subscriptions (never a secret, nor
a URL's query), each one's deliveries by state, and the latest deliveries.

A delivery is ``pending`` (not tried yet), ``failing`` (tried, due again after its
back-off), ``delivered`` or ``failed`` (the horizon passed). Rows of a subscription that
is no longer in ``config.toml`` are shown under its old name, and wait.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from scheduler.ledger.access import Engine
from scheduler.ledger.outbox_store import OutboxStore
from scheduler.settings.webhooks import WebhookDelivery, WebhookSubscription

#: The states of a delivery, in the order they are shown.
STATES = ("pending", "failing", "delivered", "failed")


class SubscriptionView(BaseModel):
    """One subscription and its deliveries by state."""

    name: str
    #: Scheme, host and path (a query may hold a token: never shown).
    url: str | None = None
    events: list[str] = Field(default_factory=list)
    configured: bool = True
    counts: dict[str, int] = Field(default_factory=dict)


class DeliveryView(BaseModel):
    """One delivery of one event to one subscription."""

    id: int
    subscription: str
    event_id: str
    type: str
    run_id: int | None = None
    state: str
    attempts: int
    created_at: datetime
    last_attempt_at: datetime | None = None
    next_attempt_at: datetime | None = None
    last_status: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None


class WebhooksView(BaseModel):
    """``campaign webhooks --json`` and the dashboard's section."""

    horizon_s: float
    subscriptions: list[SubscriptionView]
    #: Events written and not yet given out to the subscriptions (no worker ran since).
    not_given_out: int = 0
    deliveries: list[DeliveryView]


def shown_url(url: str) -> str:
    """A subscription's URL without its query, fragment or password."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}{parts.path}"


def webhooks_view(engine: Engine, subscriptions: list[WebhookSubscription],
                  delivery: WebhookDelivery, now: datetime, *,
                  states: list[str] | None = None, limit: int = 50) -> WebhooksView:
    """The outbox as people see it (``states``: only deliveries in these)."""
    counts, rows, waiting = OutboxStore(engine).readout(now, states, limit)
    subs = {s.key: SubscriptionView(name=s.key, url=shown_url(s.url), events=list(s.events))
            for s in subscriptions}
    for (name, state), n in counts.items():
        view = subs.setdefault(name, SubscriptionView(name=name, configured=False))
        view.counts[state] = n
    for view in subs.values():
        view.counts = {state: view.counts.get(state, 0) for state in STATES}
    return WebhooksView(
        horizon_s=delivery.horizon_s, subscriptions=list(subs.values()),
        not_given_out=waiting,
        deliveries=[DeliveryView(
            id=r.id, subscription=r.subscription, event_id=r.msg_id, type=r.type,
            run_id=r.run_id, state=r.state, attempts=r.attempts, created_at=r.created_at,
            last_attempt_at=r.last_attempt_at,
            next_attempt_at=r.next_attempt_at if r.state in ("pending", "failing") else None,
            last_status=r.last_status, last_error=r.last_error, delivered_at=r.delivered_at)
            for r in rows])


def retry_delivery(engine: Engine, delivery_id: int, now: datetime) -> bool:
    """Make a failed (or waiting) delivery due now; False when there is no such row."""
    return OutboxStore(engine).retry(delivery_id, now)
