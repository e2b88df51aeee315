"""WhatsApp: one send per delivery through a sender session; ``messages.sent`` proves it."""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Mapping, Sequence
from datetime import datetime

import orjson

from scheduler.core.channel_terms import terms_of
from scheduler.dispatch.channel import Answer, Progress, Quota, SendRequest, ServiceCalls
from scheduler.dispatch.recycle.outcome import NOT_REACHED, REACHED, Outcome
from scheduler.ledger.rows import DueDelivery, WatchedRow
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.account_models import AccountChannel
from scheduler.service.exceptions import ServiceError


class WhatsAppChannel:
    """Sends through ``/api/v1/messages/send/*`` and ``/interactive/send/*`` (one by one)."""

    name = "whatsapp"
    words = terms_of(name).words
    proof_events = frozenset({"messages.sent"})
    events_name_session = True
    account_webhook: AccountChannel | None = None
    #: receipts: (state, time columns they give evidence for)
    progress: Mapping[str, Progress] = {
        "message.delivered": (S.DELIVERED, ("sent_at", "delivered_at")),
        "message.read": (S.READ, ("sent_at", "delivered_at", "read_at")),
    }
    detail_keys: tuple[str, ...] = ()
    reports_keys = terms_of(name).keys
    error_codes = terms_of(name).error_codes
    unit = terms_of(name).unit
    sender_quotas = True
    batch_size = 1
    has_calls = terms_of(name).calls
    max_calls: int | None = None
    one_call_per_sender = False

    def outcome(self, row: WatchedRow, *, min_talk_s: float | None,
                when: str | None) -> Outcome:
        """What a sent row's state says of the recipient, in a retry rule's terms."""
        return _whatsapp(row, when)

    def progress_of(self, name: str, event: object) -> Progress | None:
        """What receipt ``name`` proves of its delivery (see :attr:`progress`)."""
        return self.progress.get(name)

    def proven_kinds(self, event_type: str) -> tuple[str, ...]:
        """A ``messages.sent`` of an image or a video may be one of an album's."""
        return (event_type, "album") if event_type in ("image", "video") else (event_type,)

    def request_path(self, path: str, size: int) -> str:
        """The step's own endpoint, whatever the request's size."""
        return path

    def group_key(self, row: DueDelivery) -> Hashable:
        """Every delivery is a request of its own."""
        return row.id

    def requests(self, rows: Sequence[DueDelivery], sender: str) -> list[SendRequest]:
        """The stored body (validated at plan time) with the session and the recipient."""
        return [SendRequest(row.path, {"sessionId": sender, "to": row.to,
                                       **orjson.loads(row.payload)}) for row in rows]

    async def send(self, service: ServiceCalls, rows: Sequence[DueDelivery],
                   sender: str) -> list[Answer]:
        """POST each; the ``messageId`` that ``messages.sent`` will carry as ``data.id``.

        The engine's hot path (figure P2): the body is built here, not through
        :meth:`requests`, to spare a request object per send.
        """
        answers = []
        for row in rows:
            try:
                result = await service.send_prepared(
                    row.path, {"sessionId": sender, "to": row.to, **orjson.loads(row.payload)})
            except ServiceError as exc:
                answers.append(Answer(error=exc))
            else:
                answers.append(Answer(message_id=result.messageId))
        return answers


    async def quotas(self, service: ServiceCalls, senders: list[str]) -> dict[str, Quota]:
        """Each session's remaining ``messages`` from ``GET /api/v1/limits/{sessionId}``.

        An unknown or partial answer means "no limit known" for that sender.
        """
        quotas: dict[str, Quota] = {}
        for name in senders:
            try:
                limits = await service.get_limits(name)
            except ServiceError:
                continue
            left = limits.remaining("messages")
            if left is None:
                continue
            resets_at = None
            if limits.resetsAt:
                with contextlib.suppress(ValueError):
                    resets_at = datetime.fromisoformat(limits.resetsAt.replace("Z", "+00:00"))
            quotas[name] = (float(left), resets_at)
        return quotas


def _whatsapp(row: WatchedRow, when: str | None) -> Outcome:
    if row.state == S.READ or row.read_at is not None:
        return Outcome(REACHED, "read")
    delivered = row.state == S.DELIVERED or row.delivered_at is not None
    if when == "not_read":
        return Outcome(NOT_REACHED, "delivered, not read" if delivered else "not read")
    if delivered:
        return Outcome(REACHED, "delivered")
    return Outcome(NOT_REACHED, "not delivered")
