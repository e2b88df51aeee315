"""Label events in tracking: each one a *fact* kept in the ledger's label state if newest.

A fact is one label's definition (``labels.edit``), or whether a label is on one chat or on
one message (``labels.association.*``), in one session. Facts are ordered by their
:func:`rank`: the event's time (the payload's ``ts``, else the envelope's ``timestamp``,
else when it was received), then a full-sync fact (``appstate.label.*``, an authoritative
snapshot) over a real-time one of the same time, then a fixed tie-break (a deletion over an
edit, a removal over an application) so that even two facts of the same millisecond give
the same state in any order. The ledger keeps the highest-ranked fact of each
(:mod:`scheduler.ledger.queries.labels`): the events' order of arrival does not matter, and
a repeat changes nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from scheduler.service.events import Event, LabelChatEvent, LabelEditEvent, LabelMessageEvent
from scheduler.service.label_events import LabelModel, is_full_sync
from scheduler.tracking.intake import Incoming, jid_number
from scheduler.tracking.store import LabelStore

#: Epoch milliseconds fit in 15 digits until the year 33658.
_MS_DIGITS = 15
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_label_event(event: Event) -> bool:
    """Whether ``event`` is one of the six label events."""
    return isinstance(event, LabelEditEvent | LabelChatEvent | LabelMessageEvent)


def rank(when: datetime, full_sync: bool, tie: str) -> str:
    """A fact's place in the order of facts, as text that sorts the same way."""
    ms = int((when - _EPOCH).total_seconds() * 1000)
    ms = min(max(ms, 0), 10**_MS_DIGITS - 1)
    return f"{ms:0{_MS_DIGITS}d}.{int(full_sync)}.{tie}"


def _rank_of(item: Incoming, data: LabelModel, tie: str) -> str:
    return rank(item.when, is_full_sync(item.name, data.from_full_sync), tie)


def apply_label_event(book: LabelStore, item: Incoming, now: datetime) -> str:
    """Keep the fact of a label event if it is the newest of its kind; the event's result."""
    event, session = item.event, item.session_id
    if not session:
        return "ignored: a label event without a sessionId"
    assert isinstance(event, LabelEditEvent | LabelChatEvent | LabelMessageEvent)
    source = "full sync" if is_full_sync(item.name, event.data.from_full_sync) \
        else "real time"
    if isinstance(event, LabelEditEvent):
        data = event.data
        deleted = bool(data.deleted)
        color = int(data.color) if data.color is not None else None
        tie = ("1" if deleted else "0") + json.dumps([data.name, color], ensure_ascii=True)
        book.upsert_label({
            "session_id": session, "label_id": data.key, "name": data.name, "color": color,
            "deleted": deleted, "rank": _rank_of(item, data, tie), "updated_at": now})
        what = "deleted" if deleted else f"named {data.name!r}" if data.name else "edited"
        return f"label {data.key} {what} ({source})"
    if isinstance(event, LabelMessageEvent):
        msg = event.data
        book.upsert_label_message({
            "session_id": session, "label_id": msg.key, "chat": msg.chat,
            "message_id": msg.message_id.strip().lower(), "labeled": msg.labeled,
            "rank": _rank_of(item, msg, "0" if msg.labeled else "1"), "updated_at": now})
        return f"label {msg.key} {'on' if msg.labeled else 'off'} a message ({source})"
    assert isinstance(event, LabelChatEvent)
    chat = event.data
    book.upsert_label_chat({
        "session_id": session, "label_id": chat.key, "chat": chat.chat,
        "number": jid_number(chat.chat), "labeled": chat.labeled,
        "rank": _rank_of(item, chat, "0" if chat.labeled else "1"), "updated_at": now})
    return f"label {chat.key} {'on' if chat.labeled else 'off'} chat {chat.chat} ({source})"
