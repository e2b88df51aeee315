"""Apply stored events to the ledger: states, times, replies, opt-outs, calls to reject.

Every change is monotone: a delivery's state only climbs ``TRACKING_RANK`` and each time
column keeps the earliest time any event gave it, so repeats, late and reordered events
give the same final ledger. A ``messages.sent`` whose id no delivery holds may prove an
ambiguous row (``dispatching`` / ``unknown``, left by a crash or a time-out) of the same
recipient and sender sent, as :mod:`scheduler.dispatch.reconcile` does at start-up; receipts
stored earlier for that id are then applied too, by :mod:`scheduler.tracking.matching`
(``Applied.proved``). Receipts whose message id no delivery holds yet are kept ``unmatched``
and matched when a delivery takes that id (the same module). A call whose keys
include its campaign's ``[recipients] opt_out_digit`` puts the number on the suppression list.
Label events keep each session's label state (:mod:`scheduler.tracking.label_facts`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler.dispatch.channel import Progress
from scheduler.dispatch.channels import known_channel, progress_events
from scheduler.ledger.states import DeliveryState as S
from scheduler.service.events import CallOfferEvent, MessageEvent
from scheduler.tracking.answers import answer_of
from scheduler.tracking.call_events import apply_call_event
from scheduler.tracking.call_keys import call_slot
from scheduler.tracking.details import fold
from scheduler.tracking.intake import Incoming, jid_number
from scheduler.tracking.label_facts import apply_label_event, is_label_event
from scheduler.tracking.replies import OptOutWords, reply_choices, reply_text
from scheduler.tracking.store import BatchStore, DeliveryTrackStore, ReplyStore

#: Clock skew tolerated between the dispatcher's clock and event times.
SKEW = timedelta(seconds=5)
UNMATCHED = "unmatched"
SENT_STAMPS = ("sent_at",)
#: Step kinds whose ``messages.sent`` type is known: only such an event proves such a row.
STRICT_KINDS = ("text", "image", "video", "audio", "document", "sticker", "location",
                "contact", "reaction", "list", "carousel", "album")
#: Event names matched to a delivery by message id (or call id) alone (each channel's
#: ``progress``).
MATCHED_BY_ID = progress_events()


@dataclass(frozen=True)
class ApplyContext:
    """What applying needs besides the events: opt-out words, call rejection, skew."""

    opt_out: OptOutWords
    reject_calls: bool = False
    skew: timedelta = SKEW


@dataclass(frozen=True, slots=True)
class CallToReject:
    """An incoming call to reject after the batch is committed."""

    event_id: int
    session_id: str
    call_id: str
    from_jid: str
    number: str | None


@dataclass
class Applied:
    """What a batch did: a result per event, calls to reject, ids still unmatched, and the
    message ids its proofs gave to rows in doubt (events stored earlier about them are
    matched next: :func:`scheduler.tracking.matching.apply_and_match`)."""

    results: dict[int, str] = field(default_factory=dict)
    calls: list[CallToReject] = field(default_factory=list)
    unmatched: list[tuple[int, str]] = field(default_factory=list)
    proved: list[str] = field(default_factory=list)

    def merge(self, other: Applied) -> None:
        """Add another batch's outcome to this one."""
        self.results.update(other.results)
        self.calls.extend(other.calls)
        self.unmatched.extend(other.unmatched)
        self.proved.extend(other.proved)


def _progress(item: Incoming) -> Progress | None:
    channel = known_channel(item.channel)
    return channel.progress_of(item.name, item.event) if channel is not None else None


def _proves_a_send(item: Incoming) -> bool:
    """A session's message event that proves a send (WhatsApp's ``messages.sent``)."""
    channel = known_channel(item.channel)
    return channel is not None and item.name in channel.proof_events \
        and isinstance(item.event, MessageEvent)


def apply_batch(book: BatchStore, batch: list[tuple[int, Incoming]], ctx: ApplyContext,
                now: datetime) -> Applied:
    """Apply stored events (``(event id, event)``, arrival order) in ``book``'s transaction."""
    out = Applied()
    sent: list[tuple[int, Incoming]] = []
    by_id: list[tuple[int, Incoming]] = []
    for event_id, item in batch:
        if _proves_a_send(item):
            sent.append((event_id, item))
        elif _progress(item) is not None and item.message_id_norm:
            by_id.append((event_id, item))
        elif item.name == "messages.received" and isinstance(item.event, MessageEvent):
            out.results[event_id] = _apply_reply(book, event_id, item, ctx, now)
        elif isinstance(item.event, CallOfferEvent):
            out.results[event_id] = _apply_offer(event_id, item, ctx, out)
        elif call_slot(item.event) is not None:
            out.results[event_id] = apply_call_event(book, item, now)
            if out.results[event_id] == UNMATCHED and item.message_id_norm:
                out.unmatched.append((event_id, item.message_id_norm))
        elif is_label_event(item.event):
            out.results[event_id] = apply_label_event(book, item, now)
        else:
            out.results[event_id] = "stored"
    _apply_sent(book, sent, ctx, now, out)
    _apply_by_id(book, by_id, now, out)
    return out


def _apply_sent(book: DeliveryTrackStore, items: list[tuple[int, Incoming]],
                ctx: ApplyContext, now: datetime, out: Applied) -> None:
    """``messages.sent``: ``sent`` by message id, else proof for an ambiguous row."""
    if not items:
        return
    held = book.held_message_ids(i.message_id_norm for _, i in items if i.message_id_norm)
    matched = [(i.message_id_norm, i.when) for _, i in items if i.message_id_norm in held]
    book.track_progress(S.SENT, matched, now, stamps=SENT_STAMPS)
    for event_id, item in items:
        norm = item.message_id_norm
        if norm in held:
            out.results[event_id] = "sent"
            continue
        assert isinstance(item.event, MessageEvent)
        data = item.event.data
        if norm is None or item.number is None or data.is_group:
            out.results[event_id] = UNMATCHED
            continue
        channel = known_channel(item.channel)
        kinds = channel.proven_kinds(data.type) if channel is not None else (data.type,)
        row = book.ambiguous_row_for(item.number, item.session_id, item.when + ctx.skew,
                                     kinds=kinds, strict_kinds=STRICT_KINDS)
        if row is None or not book.mark_proven_sent(row, norm, item.when, now):
            out.results[event_id] = UNMATCHED
            continue
        held.add(norm)
        out.results[event_id] = f"proved delivery {row} sent"
        out.proved.append(norm)


def _apply_by_id(book: BatchStore, items: list[tuple[int, Incoming]], now: datetime,
                 out: Applied) -> None:
    """Receipts, SMS reports and voice events: move the delivery holding their id."""
    if not items:
        return
    held = book.held_message_ids(i.message_id_norm for _, i in items if i.message_id_norm)
    groups: dict[Progress, list[tuple[str, datetime]]] = defaultdict(list)
    for event_id, item in items:
        rule = _progress(item)
        assert rule is not None and item.message_id_norm is not None
        if item.message_id_norm not in held and _prove_account_row(book, item, now):
            held.add(item.message_id_norm)
        if item.message_id_norm in held:
            groups[rule].append((item.message_id_norm, item.when))
            out.results[event_id] = rule[0]
        else:
            out.results[event_id] = UNMATCHED
            out.unmatched.append((event_id, item.message_id_norm))
    for (target, stamps), params in groups.items():
        book.track_progress(target, params, now, stamps=stamps)
    extras = {i.message_id_norm for _, i in items
              if _tells_details(i.channel) and i.message_id_norm in held}
    for norm in sorted(extras):
        details = fold(book.payloads_about(norm, MATCHED_BY_ID))
        book.merge_details(norm, details)
        if details.get("digits"):
            _ivr_opt_out(book, norm, str(details["digits"]), now)


def _tells_details(name: str | None) -> bool:
    """Whether the events of channel ``name`` tell more than a state (SMS, voice)."""
    channel = known_channel(name)
    return channel is not None and bool(channel.detail_keys)


def _ivr_opt_out(book: ReplyStore, norm: str, digits: str, now: datetime) -> None:
    """A call whose keys include its campaign's ``[recipients] opt_out_digit``: the number
    goes on the suppression list (source ``ivr``), its pending deliveries are skipped."""
    for number, run_id, campaign, definition in book.voice_calls_of(norm):
        try:
            recipients = json.loads(definition).get("recipients") or {}
        except (ValueError, AttributeError):
            continue
        key = recipients.get("opt_out_digit") if isinstance(recipients, dict) else None
        if key and str(key) in digits:
            book.add_suppression(number, source="ivr", now=now,
                                 reason=f"pressed {key} in the IVR of run {run_id} ({campaign})")


def _prove_account_row(book: DeliveryTrackStore, item: Incoming, now: datetime) -> bool:
    """An SMS or voice event whose id no delivery holds may prove a row in doubt (a bulk
    request whose answer a crash or a time-out lost) of the same channel to that number."""
    channel = known_channel(item.channel)
    if channel is None or channel.events_name_session or not item.number \
            or not item.message_id_norm:
        return False
    row = book.ambiguous_row_for(item.number, None, item.when + SKEW,
                                 only_kinds=(channel.name,))
    return row is not None and book.mark_proven_sent(row, item.message_id_norm, item.when, now)


def _apply_reply(book: BatchStore, event_id: int, item: Incoming, ctx: ApplyContext,
                 now: datetime) -> str:
    """``messages.received``: a reply on the recipient's latest delivery; maybe an opt-out."""
    assert isinstance(item.event, MessageEvent)
    data = item.event.data
    if data.fromMe:
        return "ignored: written on the session's own phone"
    if data.is_group:
        return "ignored: group message"
    number = item.number
    if number is None:
        return "ignored: the sender is not a phone number (@lid)"
    text = reply_text(data)
    # a reply that quotes one of our messages (or votes in its poll, picks from its list)
    # answers that message; otherwise the latest one sent to the number
    answered = data.answered_message_key
    latest = (book.delivery_answered(answered.lower(), number) if answered else None) \
        or book.latest_delivery_to(number, item.session_id, item.when + ctx.skew)
    opt_out = ctx.opt_out.matches(text)
    book.record_reply({  # with its outgoing webhooks' events
        "event_id": event_id, "delivery_id": latest.delivery_id if latest else None,
        "run_id": latest.run_id if latest else None, "number": number,
        "session_id": item.session_id, "kind": data.type, "text": text, "opt_out": opt_out,
        "received_at": item.when,
        # a person reads it unless a step's condition takes it (issue 35) or it opts out
        "to_answer": not opt_out,
        "choices": json.dumps(chosen, ensure_ascii=False) if (chosen := reply_choices(data))
        else None,
    }, now)
    result = (f"reply to delivery {latest.delivery_id}" if latest
              else "reply (no delivery to this number)")
    if latest is not None and not opt_out:  # steps already decided on that delivery
        late_reply(book, latest.delivery_id, text, item.when)
    answer = answer_of(data)  # a poll vote or list choice, kept on the delivery it answers
    if answer is not None and latest is not None:
        book.record_answer(latest.delivery_id, answer, item.when)
    if opt_out:
        book.add_suppression(number, source="reply", reason="replied with an opt-out word",
                             now=now)
        result += "; opted out"
    return result


def late_reply(book: ReplyStore, delivery_id: int, text: str | None, at: datetime) -> None:
    """A reply to a step whose conditions were already decided (issue 35): noted on each
    decision, never undoing it (the reply stays to answer)."""
    from scheduler.dispatch.conversation.rules import late_note
    from scheduler.ledger.conversation_rows import SeenReply

    decided = book.decided_on(delivery_id)
    if decided:
        reply = SeenReply(0, at, text)
        book.note_late([(i, at, late_note(reply, when, outcome)) for i, outcome, when in decided])


def _apply_offer(event_id: int, item: Incoming, ctx: ApplyContext, out: Applied) -> str:
    """``call.offer``: queue the rejection (done after the commit) when it is on."""
    assert isinstance(item.event, CallOfferEvent)
    data = item.event.data
    if not ctx.reject_calls:
        return "stored (reject_calls is off)"
    if data.isGroup:
        return "stored (group call: not rejected)"
    if not item.session_id:
        return "stored (no sessionId: cannot reject)"
    number = jid_number(data.from_) or jid_number(data.callCreator)
    out.calls.append(CallToReject(event_id, item.session_id, data.callId, data.from_, number))
    return "reject requested"
