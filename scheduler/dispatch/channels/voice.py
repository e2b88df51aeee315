"""Voice (URA): recipients of one audio or flow share one ``/voice/bulk``; ``call.*`` prove it.

A step stores per recipient the call's settings (``audioUrl`` or ``flowId``, ``trunk``,
``from``, ``maxAttempts``…) and the ``variables`` that fill the flow's ``{{input.*}}``
slots. Rows with the same settings form one group, sent as one bulk request with
``recipients: [{phone, variables}]`` (``numbers`` when no row has variables).

``voice/bulk`` answers with a ``bulkId`` and counts only; the call events carry
``bulkCallId`` and ``to``, so each delivery holds ``bulkid:number``
(:func:`scheduler.service.account_models.voice_key`). When the wallet runs out the service
reports how many it ``skipped``; the sandbox skips the tail of the list, and this channel
takes the last ``skipped`` recipients as not dialed (they wait in the plan, the run
pauses). A call is in progress from its acceptance until ``call.ended``: the engine keeps
that number under the campaign's ``max_calls`` and the account's allowance
(:attr:`VoiceChannel.has_calls`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import orjson

from scheduler.core.channel_terms import terms_of
from scheduler.dispatch.channel import Answer, Progress, Quota, SendRequest, ServiceCalls
from scheduler.dispatch.recycle.outcome import PENDING, REACHED, Outcome
from scheduler.ledger.rows import DueDelivery, WatchedRow
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.account_models import (
    VOICE_BULK_PATH,
    AccountChannel,
    VoiceBulkResult,
    voice_key,
)
from scheduler.service.exceptions import InsufficientBalance, NoAnswer, ServiceError

#: Recipients per bulk request when the campaign does not say (``[pace] batch``).
DEFAULT_BATCH = 10
#: Calls in progress at once when the campaign does not say (``[pace] max_calls``).
DEFAULT_MAX_CALLS = 10


def _split(payload: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    body = orjson.loads(payload)
    variables = body.pop("variables", None)
    return body, variables


#: Q.850 causes of an unanswered voice call, as the service reports them.
BUSY_CAUSES = frozenset({17})
NO_ANSWER_CAUSES = frozenset({19, 150, 151})
CAUSE_WORDS = {16: "normal clearing", 17: "busy", 18: "no response", 19: "no answer",
               21: "rejected", 27: "out of order", 34: "no circuit",
               150: "ring time-out", 151: "voicemail"}


class VoiceChannel:
    """Places calls through ``/api/v1/voice/bulk``; outcomes come from ``call.*`` events."""

    name = "voice"
    words = terms_of(name).words
    proof_events = frozenset({"call.started", "call.answered", "call.dtmf", "call.ended"})
    events_name_session = False
    account_webhook: AccountChannel | None = "voice"
    #: a call's steps: (state, time columns they give evidence for)
    progress: Mapping[str, Progress] = {
        "call.started": (S.SENT, ("sent_at",)),
        "call.answered": (S.ANSWERED, ("sent_at",)),
        "call.dtmf": (S.ANSWERED, ("sent_at",)),
        "call.ended": (S.NOT_ANSWERED, ("sent_at", "ended_at")),
    }
    detail_keys: tuple[str, ...] = ("callId", "talkSeconds", "cause", "causeDescription")
    reports_keys = terms_of(name).keys
    error_codes = terms_of(name).error_codes
    unit = terms_of(name).unit
    sender_quotas = False
    has_calls = terms_of(name).calls
    one_call_per_sender = False

    def __init__(self, *, batch_size: int | None = None, bulk_max: int = 1000,
                 max_calls: int | None = None) -> None:
        self.max_calls = max_calls or DEFAULT_MAX_CALLS
        self.batch_size = max(1, min(batch_size or DEFAULT_BATCH, bulk_max, self.max_calls))

    def outcome(self, row: WatchedRow, *, min_talk_s: float | None,
                when: str | None) -> Outcome:
        """What a sent row's state says of the recipient, in a retry rule's terms."""
        return _voice(row, min_talk_s)

    def progress_of(self, name: str, event: object) -> Progress | None:
        """What call event ``name`` proves; a ``call.ended`` saying ``answered`` was."""
        rule = self.progress.get(name)
        if rule is not None and name == "call.ended":
            answered = getattr(getattr(event, "data", None), "answered", None)
            return (S.ANSWERED, rule[1]) if answered else rule
        return rule

    def proven_kinds(self, event_type: str) -> tuple[str, ...]:
        """A proof event proves a step of its own type."""
        return (event_type,)

    def request_path(self, path: str, size: int) -> str:
        """The step's own endpoint, whatever the request's size."""
        return path

    def group_key(self, row: DueDelivery) -> Hashable:
        """Rows with the same call settings (all but ``variables``) share a bulk request."""
        shared, _ = _split(row.payload)
        return orjson.dumps(shared, option=orjson.OPT_SORT_KEYS)

    def requests(self, rows: Sequence[DueDelivery], sender: str) -> list[SendRequest]:
        """One ``voice/bulk`` with the group's recipients and their variables."""
        if not rows:
            return []
        shared, _ = _split(rows[0].payload)
        recipients = []
        for row in rows:
            _, variables = _split(row.payload)
            recipients.append({"phone": row.to, **({"variables": variables}
                                                   if variables else {})})
        if any("variables" in r for r in recipients):
            return [SendRequest(VOICE_BULK_PATH, {**shared, "recipients": recipients})]
        return [SendRequest(VOICE_BULK_PATH, {**shared, "numbers": [row.to for row in rows]})]

    async def send(self, service: ServiceCalls, rows: Sequence[DueDelivery],
                   sender: str) -> list[Answer]:
        """Send the group; the first ``dialed`` rows are placed, the last ``skipped`` not."""
        (request,) = self.requests(rows, sender)
        try:
            result = await service.post_prepared(request.path, request.body, VoiceBulkResult)
        except ServiceError as exc:
            return [Answer(error=exc) for _ in rows]
        return answers_for(rows, result)


    async def quotas(self, service: ServiceCalls, senders: list[str]) -> dict[str, Quota]:
        """No per-sender plan quota: the account's daily cap is the campaign's ``daily_cap``."""
        return {}


def answers_for(rows: Sequence[DueDelivery], result: VoiceBulkResult) -> list[Answer]:
    """Each row's answer from a bulk answer's counts (see the module doc)."""
    n = len(rows)
    skipped = max(0, min(result.skipped, n))
    dialed = max(0, min(result.dialed, n - skipped))
    answers: list[Answer] = []
    for index, row in enumerate(rows):
        key = voice_key(result.bulkId, row.to)
        if index < dialed and key is not None:
            answers.append(Answer(message_id=key, details={"bulkId": result.bulkId}))
        elif index >= n - skipped:
            answers.append(Answer(error=InsufficientBalance(
                402, "skipped: the wallet ran out", path=VOICE_BULK_PATH)))
        else:
            answers.append(Answer(error=NoAnswer(
                f"POST {VOICE_BULK_PATH}: dialed {result.dialed} and skipped "
                f"{result.skipped} of {n}: this call is not accounted for")))
    return answers


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _cause(details: dict[str, Any]) -> tuple[int | None, str]:
    cause = _int(details.get("cause"))
    if cause is None:
        return None, "no cause reported"
    words = CAUSE_WORDS.get(cause) or str(details.get("causeDescription") or "").strip()
    return cause, f"{words[:40]}, cause {cause}" if words else f"cause {cause}"


def _voice(row: WatchedRow, min_talk_s: float | None) -> Outcome:
    if row.state == S.ANSWERED:
        talk = row.details.get("talkSeconds")
        if min_talk_s is None:
            return Outcome(REACHED, "answered")
        if row.ended_at is None:
            return Outcome(PENDING, "answered, still talking")
        if not isinstance(talk, int | float) or isinstance(talk, bool):
            return Outcome(REACHED, "answered (its length was not reported)")
        if talk >= min_talk_s:
            return Outcome(REACHED, f"answered for {_seconds(talk)}")
        return Outcome("no_answer", f"answered for {_seconds(talk)}, less than min_talk "
                                    f"{_seconds(min_talk_s)}: counted as not reached",
                       short=True)
    if row.state == S.NOT_ANSWERED:
        cause, words = _cause(row.details)
        if cause in BUSY_CAUSES:
            return Outcome("busy", f"busy (cause {cause})")
        if cause in NO_ANSWER_CAUSES:
            return Outcome("no_answer", f"not answered ({words})")
        return Outcome("failed", f"call failed ({words})")
    return Outcome(PENDING, "the call has not ended")
