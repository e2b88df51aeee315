"""The sandbox's labels: each session's label state, and the events that tell it.

A test (or the demo) changes a session's labels through ``POST /sandbox/sessions/{id}/labels``
(labels created, edited, deleted; labels applied to or removed from chats and messages):
the sandbox keeps the new state and posts one real-time event per change (``labels.edit``,
``labels.association.chat``, ``labels.association.message``) to the session's webhook.
``POST /sandbox/sessions/{id}/labels/full-sync`` posts the whole state again as the
full-sync events (``appstate.label.*``, ``from_full_sync`` true), each fact with the time
of its last change, as the phone's app-state sync does. Each change is time-stamped (``ts``,
epoch ms) 1 ms after the session's previous one at least, so the order of the changes is
in their times whatever order the webhook delivers them in (its faults apply: repeats,
delays, reordering).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from scheduler.service.label_events import CHAT_EVENTS, EDIT_EVENTS, MESSAGE_EVENTS
from scheduler.service.requests import NonEmpty

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LabelChange(_Body):
    """A label created or edited (``deleted`` true: deleted)."""

    id: NonEmpty
    name: str | None = None
    color: int | None = None
    deleted: bool = False


class ChatChange(_Body):
    """A label applied to (or removed from) a chat: digits or a JID (``…@lid`` too)."""

    label: NonEmpty
    chat: NonEmpty
    labeled: bool = True


class MessageChange(ChatChange):
    """A label applied to (or removed from) one message of a chat."""

    messageId: NonEmpty = Field(alias="messageId")


class LabelChanges(_Body):
    """``POST /sandbox/sessions/{id}/labels``: changes, applied and announced in this order:
    labels, then chats, then messages."""

    labels: list[LabelChange] = []
    chats: list[ChatChange] = []
    messages: list[MessageChange] = []


def chat_jid(chat: str) -> str:
    """A chat as a JID: digits become a phone-number JID, a JID stays as it is."""
    return chat if "@" in chat else f"{chat.lstrip('+')}@s.whatsapp.net"


@dataclass
class SessionLabels:
    """One session's label state: each fact with the time (ms) of its last change."""

    labels: dict[str, tuple[dict[str, Any], int]] = field(default_factory=dict)
    chats: dict[tuple[str, str], tuple[bool, int]] = field(default_factory=dict)
    messages: dict[tuple[str, str, str], tuple[bool, int]] = field(default_factory=dict)
    last_ms: int = 0

    def record(self) -> dict[str, Any]:
        """The state as ``GET /sandbox/sessions/{id}/labels`` shows it."""
        return {
            "labels": [{"id": k, **v} for k, (v, _) in sorted(self.labels.items())],
            "chats": [{"label": k[0], "chat": k[1], "labeled": on}
                      for k, (on, _) in sorted(self.chats.items())],
            "messages": [{"label": k[0], "chat": k[1], "messageId": k[2], "labeled": on}
                         for k, (on, _) in sorted(self.messages.items())],
        }


class LabelDesk:
    """Every session's labels in the sandbox, and the events that announce them."""

    def __init__(self, sandbox: WorldView) -> None:
        self.sandbox = sandbox
        self.sessions: dict[str, SessionLabels] = {}

    def state(self, session_id: str) -> SessionLabels:
        """The session's label state (404 for an unknown session)."""
        self.sandbox.session(session_id)
        return self.sessions.setdefault(session_id, SessionLabels())

    def _tick(self, state: SessionLabels) -> int:
        now = max(self.sandbox.now_ms(), state.last_ms + 1)
        state.last_ms = now
        return now

    def change(self, session_id: str, body: LabelChanges) -> dict[str, Any]:
        """Apply ``body`` and post one real-time event per change; the events posted."""
        state, session = self.state(session_id), self.sandbox.session(session_id)
        posted = 0
        for label in body.labels:
            ts = self._tick(state)
            data = {"name": label.name, "color": label.color, "deleted": label.deleted}
            state.labels[label.id] = (data, ts)
            self.sandbox.emit(session, EDIT_EVENTS[0], {"label_id": label.id, **data,
                                                        "ts": ts})
            posted += 1
        for chat in body.chats:
            ts, jid = self._tick(state), chat_jid(chat.chat)
            state.chats[(chat.label, jid)] = (chat.labeled, ts)
            self.sandbox.emit(session, CHAT_EVENTS[0], {
                "label_id": chat.label, "chat": jid, "labeled": chat.labeled, "ts": ts})
            posted += 1
        for msg in body.messages:
            ts, jid = self._tick(state), chat_jid(msg.chat)
            state.messages[(msg.label, jid, msg.messageId)] = (msg.labeled, ts)
            self.sandbox.emit(session, MESSAGE_EVENTS[0], {
                "label_id": msg.label, "chat": jid, "message_id": msg.messageId,
                "labeled": msg.labeled, "ts": ts})
            posted += 1
        return {"success": True, "events": posted}

    def full_sync(self, session_id: str) -> dict[str, Any]:
        """Post the whole state as ``appstate.label.*`` events (each fact at its own time)."""
        state, session = self.state(session_id), self.sandbox.session(session_id)
        full = {"from_full_sync": True}
        for label_id, (data, ts) in state.labels.items():
            self.sandbox.emit(session, EDIT_EVENTS[1],
                              {"label_id": label_id, **data, **full, "ts": ts})
        for (label_id, jid), (on, ts) in state.chats.items():
            self.sandbox.emit(session, CHAT_EVENTS[1], {
                "label_id": label_id, "chat": jid, "labeled": on, **full, "ts": ts})
        for (label_id, jid, message_id), (on, ts) in state.messages.items():
            self.sandbox.emit(session, MESSAGE_EVENTS[1], {
                "label_id": label_id, "chat": jid, "message_id": message_id, "labeled": on,
                **full, "ts": ts})
        count = len(state.labels) + len(state.chats) + len(state.messages)
        return {"success": True, "events": count}
