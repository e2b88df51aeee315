"""The seam between the engine and a channel (WhatsApp, SMS, voice), and the service calls.

The dispatcher, the ledger and the reports are channel-neutral: what differs between
channels sits behind :class:`Channel`, as listmonk keeps its messengers behind a few
methods. A channel says

- which deliveries may share one request (:meth:`Channel.group_key`; at most
  :attr:`Channel.batch_size` of them): WhatsApp sends one by one, SMS groups recipients of
  the same rendered text into ``/sms/bulk``, voice the recipients of one audio or flow into
  ``/voice/bulk``;
- what the requests are (:meth:`Channel.requests`: endpoint and body, exactly what goes on
  the wire; ``campaign preview`` shows them; only WhatsApp bodies carry ``sessionId``),
- how they are sent and what the answer says of each delivery (:meth:`Channel.send`: one
  :class:`Answer` per delivery, the id the service's events will carry, or an error),
- which events prove a send was taken (:attr:`Channel.proof_events`) and whether they
  name the sending session (:attr:`Channel.events_name_session`), which move a delivery
  later (:attr:`Channel.progress`) and what they tell beyond a state
  (:attr:`Channel.detail_keys`), and
- how much its senders may still send (:meth:`Channel.quotas`).

How an error becomes an outcome is the same on every channel
(:func:`scheduler.dispatch.retry.classify`). A bulk request is one unit: its deliveries are
claimed together, before the call, and settled together from its answer.
:class:`ServiceCalls` is the narrow part of the service client the engine uses, so the
dispatcher never holds an ``Any`` client. A new channel is a new module in
:mod:`scheduler.dispatch.channels`, registered in
:func:`scheduler.dispatch.channels.channel_for`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from scheduler.dispatch.recycle.outcome import Outcome
from scheduler.ledger.rows import DueDelivery, WatchedRow
from scheduler.service.account_models import AccountChannel
from scheduler.service.exceptions import ServiceError
from scheduler.service.responses import Limits, SendResult

#: A sender's remaining plan quota and when it resets (``None``: unknown).
Quota = tuple[float, datetime | None]
#: What an event moves a delivery to: the state it proves and the time columns it gives
#: evidence for (``sent_at``, ``delivered_at``…).
Progress = tuple[str, tuple[str, ...]]
Answered = TypeVar("Answered", bound=BaseModel)


class ServiceCalls(Protocol):
    """The service calls the engine makes (``ServiceClient`` has them)."""

    async def send_prepared(self, path: str, body: dict[str, Any]) -> SendResult:
        """POST a body validated at plan time; the service's answer."""

    async def post_prepared(self, path: str, body: dict[str, Any],
                            answer: type[Answered]) -> Answered:
        """POST a validated body and read the answer with ``answer`` (SMS, voice)."""

    async def get_limits(self, session_id: str) -> Limits:
        """The plan limits and usage of a sender."""


@dataclass(frozen=True, slots=True)
class SendRequest:
    """One request to the service: an endpoint and its body."""

    path: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Answer:
    """What the service's answer says of one delivery of a request.

    ``message_id``: the id its events will carry (None when the answer had none); ``error``:
    why it was not taken; ``details``: what to keep in ``deliveries.details`` (SMS segments
    and cost).
    """

    message_id: str | None = None
    error: ServiceError | None = None
    details: dict[str, Any] | None = None


class Channel(Protocol):
    """What the engine needs to know of a channel (see the module doc)."""

    #: ``runs.channel`` of the runs it sends.
    name: str
    #: The channel in words, as the retry lines say it ("the SMS fallback").
    words: str
    #: Webhook events that prove the service took a send (reconciliation looks for these).
    proof_events: frozenset[str]
    #: Whether those events name the sending session (WhatsApp's do; the account's SMS
    #: and voice events do not: the number and the time must do; they come to the account
    #: webhook).
    events_name_session: bool
    #: The account webhook its events come to (``sms``, ``voice``; None: each sender's
    #: session webhook). Runs of such a channel send from the account: no session to check.
    account_webhook: AccountChannel | None
    #: Events (receipts, reports, a call's steps) that move the delivery holding their
    #: message id, each with the progress it proves (:meth:`progress_of`).
    progress: Mapping[str, Progress]
    #: What its events tell beyond a state, kept in ``deliveries.details`` (the service's
    #: spelling: SMS segments and error code, a voice call's length and cause).
    detail_keys: tuple[str, ...]
    #: Whether its events report keys pressed and whether a call was answered (voice: the
    #: report's outcomes and digits sections, talk time).
    reports_keys: bool
    #: Whether its delivery reports say why a send was not delivered, with an error code,
    #: and its sends are priced by segment (SMS: the report's error-code section, segments
    #: and cost).
    error_codes: bool
    #: What one delivery is counted as in a funnel ("messages", "calls").
    unit: str
    #: Whether the service keeps a plan quota per sender (``GET /limits``: a WhatsApp
    #: session's messages; :meth:`quotas` reads it).
    sender_quotas: bool
    #: Deliveries per request: 1 for one-by-one endpoints, more for a bulk endpoint.
    batch_size: int
    #: Whether a delivery stays "in progress" after it is taken (a call, until it ends).
    has_calls: bool
    #: Whether each sender has at most one call under way (a WhatsApp session's calls).
    one_call_per_sender: bool

    @property
    def max_calls(self) -> int | None:
        """Calls the run may have in progress (``has_calls`` channels; None elsewhere)."""

    def progress_of(self, name: str, event: object) -> Progress | None:
        """What event ``name`` (``event``, the parsed event) proves of its delivery; None
        when it is not one of :attr:`progress`."""

    def proven_kinds(self, event_type: str) -> tuple[str, ...]:
        """The step kinds a proof event of ``event_type`` (a ``messages.sent``'s type) may
        prove sent (an album is sent as images and videos)."""

    def request_path(self, path: str, size: int) -> str:
        """The endpoint of a request of ``size`` rows of a step stored with ``path``."""

    def group_key(self, row: DueDelivery) -> Hashable:
        """Deliveries with equal keys may share one request."""

    def requests(self, rows: Sequence[DueDelivery], sender: str) -> list[SendRequest]:
        """The requests that send ``rows`` (one group) from ``sender``, in order."""

    async def send(self, service: ServiceCalls, rows: Sequence[DueDelivery],
                   sender: str) -> list[Answer]:
        """Send ``rows`` (one group); one :class:`Answer` per row, in order.

        A request that fails as a whole gives every row of it the same error.
        """


    def outcome(self, row: WatchedRow, *, min_talk_s: float | None,
                when: str | None) -> Outcome:
        """What a sent row's state says of the recipient, in a retry rule's terms
        (:func:`scheduler.dispatch.recycle.outcome.classify` asks it)."""

    async def quotas(self, service: ServiceCalls, senders: list[str]) -> dict[str, Quota]:
        """Each sender's remaining quota, where the service says it."""
