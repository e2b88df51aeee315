"""SMS: recipients of the same rendered text share one ``/sms/bulk``; ``sms.*`` prove a send.

A step's text is rendered per recipient at plan time; rows whose stored body (text, route,
sender) is equal form one group, sent as one bulk request of up to ``batch_size`` numbers,
so personalised campaigns still use the bulk endpoint wherever two recipients read the same
text. A group of one goes to ``/sms/send``, whose answer says the segments and the cost.

Each recipient's segments are counted before sending (GSM-7 / UCS-2) and kept with its
cost (segments × the route's price per segment, from the settings) in ``details``; the
``sms.*`` event's ``segments`` later overwrites the count, and a difference is kept as
``segmentsCounted``. A ``skipped`` recipient (the wallet ran out) is
:class:`~scheduler.service.exceptions.InsufficientBalance`: the engine pauses the run and
the row waits in the plan.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import orjson

from scheduler.campaign.segments import sms_segments
from scheduler.core.channel_terms import terms_of
from scheduler.dispatch.channel import Answer, Progress, Quota, SendRequest, ServiceCalls
from scheduler.dispatch.recycle.outcome import PENDING, REACHED, Outcome
from scheduler.ledger.rows import DueDelivery, WatchedRow
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.account_models import (
    SMS_BULK_PATH,
    SMS_SEND_PATH,
    AccountChannel,
    SmsBulkResult,
    SmsSendResult,
)
from scheduler.service.exceptions import (
    InsufficientBalance,
    NoAnswer,
    RequestRejected,
    ServiceError,
)

#: Recipients per bulk request when the campaign does not say (``[pace] batch``).
DEFAULT_BATCH = 100
DEFAULT_ROUTE = "marketing"


def _digits(number: str) -> str:
    return "".join(ch for ch in number if ch.isdigit())


#: SMS error codes after which no other channel is tried either.
NO_FALLBACK_SMS_CODES = frozenset({"INVALID_NUMBER", "BLACKLIST"})


class SmsChannel:
    """Sends through ``/api/v1/sms/bulk`` (and ``/sms/send`` for a text of its own)."""

    name = "sms"
    words = terms_of(name).words
    proof_events = frozenset({"sms.delivered", "sms.undelivered", "sms.failed", "sms.expired"})
    events_name_session = False
    account_webhook: AccountChannel | None = "sms"
    #: delivery reports: (state, time columns they give evidence for)
    progress: Mapping[str, Progress] = {
        "sms.delivered": (S.DELIVERED, ("sent_at", "delivered_at")),
        "sms.undelivered": (S.UNDELIVERED, ("sent_at",)),
        "sms.failed": (S.UNDELIVERED, ("sent_at",)),
        "sms.expired": (S.UNDELIVERED, ("sent_at",)),
    }
    detail_keys: tuple[str, ...] = ("segments", "errorCode")
    reports_keys = terms_of(name).keys
    error_codes = terms_of(name).error_codes
    unit = terms_of(name).unit
    sender_quotas = False
    has_calls = terms_of(name).calls
    max_calls: int | None = None
    one_call_per_sender = False

    def __init__(self, *, batch_size: int | None = None, bulk_max: int = 1000,
                 prices: dict[str, int] | None = None) -> None:
        self.batch_size = max(1, min(batch_size or DEFAULT_BATCH, bulk_max))
        self.prices = dict(prices or {})

    def outcome(self, row: WatchedRow, *, min_talk_s: float | None,
                when: str | None) -> Outcome:
        """What a sent row's state says of the recipient, in a retry rule's terms."""
        return _sms(row)

    def progress_of(self, name: str, event: object) -> Progress | None:
        """What event ``name`` proves of its delivery (see :attr:`progress`)."""
        return self.progress.get(name)

    def proven_kinds(self, event_type: str) -> tuple[str, ...]:
        """A proof event proves a step of its own type."""
        return (event_type,)

    def request_path(self, path: str, size: int) -> str:
        """``sms/send`` for one recipient, ``sms/bulk`` for more."""
        return SMS_SEND_PATH if size == 1 else SMS_BULK_PATH

    def group_key(self, row: DueDelivery) -> Hashable:
        """Rows with the same stored body (text, route, sender) share a bulk request."""
        return row.payload

    def requests(self, rows: Sequence[DueDelivery], sender: str) -> list[SendRequest]:
        """One ``sms/bulk`` of the group's numbers (``sms/send`` for one); no ``sessionId``."""
        if not rows:
            return []
        body = orjson.loads(rows[0].payload)
        if len(rows) == 1:
            return [SendRequest(SMS_SEND_PATH, {"to": rows[0].to, **body})]
        return [SendRequest(SMS_BULK_PATH, {"to": [row.to for row in rows], **body})]

    def estimate(self, payload: str) -> dict[str, Any]:
        """Segments, encoding and estimated cost of one recipient of a stored body."""
        body = orjson.loads(payload)
        counted = sms_segments(str(body.get("text", "")))
        price = self.prices.get(str(body.get("route") or DEFAULT_ROUTE))
        details: dict[str, Any] = {"segments": counted.parts, "encoding": counted.encoding}
        if price is not None:
            details["costMicroReais"] = counted.parts * price
        return details

    async def send(self, service: ServiceCalls, rows: Sequence[DueDelivery],
                   sender: str) -> list[Answer]:
        """Send the group; one answer per row (bulk results matched by number)."""
        (request,) = self.requests(rows, sender)
        details = self.estimate(rows[0].payload)
        try:
            if request.path == SMS_SEND_PATH:
                single = await service.post_prepared(request.path, request.body, SmsSendResult)
                return [self._single_answer(single, details)]
            bulk = await service.post_prepared(request.path, request.body, SmsBulkResult)
        except ServiceError as exc:
            return [Answer(error=exc) for _ in rows]
        return self._bulk_answers(rows, bulk, details)

    @staticmethod
    def _single_answer(result: SmsSendResult, counted: dict[str, Any]) -> Answer:
        details = dict(counted)
        if result.segments is not None and result.segments != counted["segments"]:
            details["segmentsCounted"] = counted["segments"]
            details["segments"] = result.segments
        if result.costMicroReais is not None:
            details["costMicroReais"] = result.costMicroReais
        if (result.status or "").lower() == "failed":
            return Answer(error=RequestRejected(200, "the service answered status failed",
                                                path=SMS_SEND_PATH))
        return Answer(message_id=result.messageId, details=details)

    @staticmethod
    def _bulk_answers(rows: Sequence[DueDelivery], result: SmsBulkResult,
                      details: dict[str, Any]) -> list[Answer]:
        by_number = {_digits(item.to): item for item in result.results}
        answers = []
        for row in rows:
            item = by_number.get(_digits(row.to))
            if item is None:
                answers.append(Answer(error=NoAnswer(
                    f"POST {SMS_BULK_PATH}: the answer has no result for this number")))
            elif item.status == "sent":
                answers.append(Answer(message_id=item.messageId, details=dict(details)))
            elif item.status == "skipped":
                answers.append(Answer(error=InsufficientBalance(
                    402, item.error or "skipped: the wallet ran out", path=SMS_BULK_PATH)))
            else:
                answers.append(Answer(error=RequestRejected(
                    200, item.error or "failed", path=SMS_BULK_PATH)))
        return answers


    async def quotas(self, service: ServiceCalls, senders: list[str]) -> dict[str, Quota]:
        """No per-sender plan quota: the account's daily cap is the campaign's ``daily_cap``."""
        return {}


def _sms(row: WatchedRow) -> Outcome:
    if row.state in (S.DELIVERED, S.READ):
        return Outcome(REACHED, "SMS delivered")
    if row.state == S.UNDELIVERED:
        raw = row.details.get("errorCode")
        code = str(raw).strip().upper() if raw else None
        return Outcome("undelivered", f"SMS undelivered ({code or 'no error code'})", code,
                       may_fall_back=code not in NO_FALLBACK_SMS_CODES)
    return Outcome(PENDING, "no delivery report yet")
