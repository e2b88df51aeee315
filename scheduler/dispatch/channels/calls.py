"""WhatsApp calls to a list (``channel = "calls"``): a call per recipient, one a session at a time.

Each delivery is one ``POST /api/v1/calls/place`` (``{sessionId, to}``), or
``/calls/stream`` (``{sessionId, to, record: true}``) when the step records. The answer's
``callId`` is the delivery's message id: the call's events (``call.ringing``,
``call.connected``, then one ``call.ended`` or ``call.not_answered``; the recording's
``call.audio``) carry it, and tracking moves the delivery with them
(:mod:`scheduler.tracking.call_events`). Those events name the session, so they also prove
a call whose answer a crash lost.

A session places one call at a time (:attr:`CallsChannel.one_call_per_sender`): the engine
holds a sender from the claim of its call until the ledger shows the call's terminal event,
or a time-out (``whatsapp_call_timeout_s``); see
:func:`scheduler.dispatch.limits.follow_sender_calls`. Calls are refused on ``cloud_api``
connections: ``campaign run`` checks the senders first, and a refusal at send time fails
the delivery with the service's words.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import orjson

from scheduler.core.channel_terms import terms_of
from scheduler.dispatch.channel import Answer, Progress, Quota, SendRequest, ServiceCalls
from scheduler.dispatch.recycle.outcome import PENDING, REACHED, Outcome
from scheduler.ledger.rows import DueDelivery, WatchedRow
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.account_models import AccountChannel
from scheduler.service.call_models import OUTGOING_STATES, STREAM_PATH, PlacedCall
from scheduler.service.exceptions import ServiceError


class CallsChannel:
    """Places WhatsApp calls through ``/api/v1/calls/place`` or ``/calls/stream``."""

    name = "calls"
    words = terms_of(name).words
    #: a placed call's events (they name the session)
    proof_events = frozenset(OUTGOING_STATES)
    events_name_session = True
    account_webhook: AccountChannel | None = None
    #: a call's events move it through :mod:`scheduler.tracking.call_events`
    progress: Mapping[str, Progress] = {}
    detail_keys: tuple[str, ...] = ()
    reports_keys = terms_of(name).keys
    error_codes = terms_of(name).error_codes
    unit = terms_of(name).unit
    sender_quotas = False
    batch_size = 1
    has_calls = terms_of(name).calls
    one_call_per_sender = True

    def __init__(self, senders: int = 1) -> None:
        #: a call under way per sender at most
        self.max_calls: int | None = max(1, senders)

    def outcome(self, row: WatchedRow, *, min_talk_s: float | None,
                when: str | None) -> Outcome:
        """What a sent row's state says of the recipient, in a retry rule's terms."""
        return _calls(row)

    def progress_of(self, name: str, event: object) -> Progress | None:
        """What event ``name`` proves of its delivery (see :attr:`progress`)."""
        return self.progress.get(name)

    def proven_kinds(self, event_type: str) -> tuple[str, ...]:
        """A proof event proves a step of its own type."""
        return (event_type,)

    def request_path(self, path: str, size: int) -> str:
        """The step's own endpoint, whatever the request's size."""
        return path

    def group_key(self, row: DueDelivery) -> Hashable:
        """Every call is a request of its own."""
        return row.id

    def requests(self, rows: Sequence[DueDelivery], sender: str) -> list[SendRequest]:
        """``{sessionId, to}``, with ``record: true`` on ``calls/stream``."""
        out = []
        for row in rows:
            body: dict[str, object] = {"sessionId": sender, "to": row.to}
            if row.path == STREAM_PATH and orjson.loads(row.payload).get("record") is True:
                body["record"] = True
            out.append(SendRequest(row.path, body))
        return out

    async def send(self, service: ServiceCalls, rows: Sequence[DueDelivery],
                   sender: str) -> list[Answer]:
        """Place each call; its ``callId`` keys its events."""
        answers = []
        for request in self.requests(rows, sender):
            try:
                placed = await service.post_prepared(request.path, request.body, PlacedCall)
            except ServiceError as exc:
                answers.append(Answer(error=exc))
                continue
            mode = "stream" if request.path == STREAM_PATH else "place"
            answers.append(Answer(message_id=placed.call_id,
                                  details={"callId": placed.call_id, "mode": mode}))
        return answers


    async def quotas(self, service: ServiceCalls, senders: list[str]) -> dict[str, Quota]:
        """No message quota applies to calls; the campaign's ``daily_cap`` bounds them."""
        return {}


def _calls(row: WatchedRow) -> Outcome:
    if row.state == S.ANSWERED:
        return Outcome(REACHED, "WhatsApp call answered")
    if row.state == S.NOT_ANSWERED:
        return Outcome("not_answered", "WhatsApp call not answered")
    return Outcome(PENDING, "the WhatsApp call has not ended")
