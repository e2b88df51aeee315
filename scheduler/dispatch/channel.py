"""The seam between the engine and a channel (WhatsApp, SMS, voice), and the service calls.

The dispatcher, the ledger and the reports are channel-neutral: what differs between
channels sits behind :class:`Channel`, as listmonk keeps its messengers behind a few
methods. A channel says

- how a delivery becomes a request (:meth:`Channel.request`: endpoint and body; only
  WhatsApp bodies carry ``sessionId``),
- how a request is sent and what its answer proves (:meth:`Channel.send` returns the id
  that the service's events will carry), one delivery per request or up to
  :attr:`Channel.batch_size` per bulk request,
- how an error becomes an outcome (:meth:`Channel.verdict`),
- which events prove a send was taken (:attr:`Channel.proof_events`), and
- how much its senders may still send (:meth:`Channel.quotas`).

:class:`ServiceCalls` is the narrow part of the service client the engine uses, so the
dispatcher never holds an ``Any`` client. A new channel is a new module in
:mod:`scheduler.dispatch.channels`, registered in :func:`scheduler.dispatch.channels.channel_for`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from scheduler.dispatch.retry import Verdict
from scheduler.ledger.rows import DueDelivery
from scheduler.service.exceptions import ServiceError
from scheduler.service.responses import Limits, SendResult

#: A sender's remaining plan quota and when it resets (``None``: unknown).
Quota = tuple[float, datetime | None]


class ServiceCalls(Protocol):
    """The service calls the engine makes (``ServiceClient`` has them)."""

    async def send_prepared(self, path: str, body: dict[str, Any]) -> SendResult:
        """POST a body validated at plan time; the service's answer."""
        ...

    async def get_limits(self, session_id: str) -> Limits:
        """The plan limits and usage of a sender."""
        ...


@dataclass(frozen=True, slots=True)
class SendRequest:
    """One request to the service: an endpoint and its body."""

    path: str
    body: dict[str, Any]


class Channel(Protocol):
    """What the engine needs to know of a channel (see the module doc)."""

    #: ``runs.channel`` of the runs it sends.
    name: str
    #: Webhook events that prove the service took a send (reconciliation looks for these).
    proof_events: frozenset[str]
    #: Deliveries per request: 1 for one-by-one endpoints, more for a bulk endpoint.
    batch_size: int

    def request(self, row: DueDelivery, sender: str) -> SendRequest:
        """The request that sends ``row`` from ``sender``."""
        ...

    async def send(self, service: ServiceCalls, request: SendRequest) -> str | None:
        """Send; the id the service's events will carry (raises ``ServiceError``)."""
        ...

    def verdict(self, error: ServiceError) -> Verdict:
        """What the engine does with a send that raised ``error``."""
        ...

    async def quotas(self, service: ServiceCalls, senders: list[str]) -> dict[str, Quota]:
        """Each sender's remaining quota, where the service says it."""
        ...
