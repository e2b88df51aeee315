"""The ``data`` payloads of the six label events, and what a label fact is.

Real-time events and their full-sync twins (``appstate.label.*``, ``from_full_sync`` always
true) have the same shape pairwise (``service-interface.md``, *Label events*):

- ``labels.edit`` / ``appstate.label.edit``: a label created, edited or deleted;
- ``labels.association.chat`` / ``appstate.label.association.chat``: a label applied to
  (``labeled`` true) or removed from a chat;
- ``labels.association.message`` / ``appstate.label.association.message``: the same for one
  message of a chat.

``chat`` may be an unresolved ``@lid`` JID. ``ts`` (epoch milliseconds of the change) is
documented on the Label resource; association payloads may carry it too (ours: kept when
present). Label ids are strings or numbers on the wire; :attr:`LabelEdit.key` gives the
string every store compares.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from scheduler.service.responses import normalise_message_id

Number = int | float
LabelId = str | int

#: Event names of each shape: (real time, full sync).
EDIT_EVENTS = ("labels.edit", "appstate.label.edit")
CHAT_EVENTS = ("labels.association.chat", "appstate.label.association.chat")
MESSAGE_EVENTS = ("labels.association.message", "appstate.label.association.message")
FULL_SYNC_PREFIX = "appstate."


def is_full_sync(event_name: str, from_full_sync: bool | None) -> bool:
    """Whether an event is part of a full sync (its name, or its ``from_full_sync`` flag)."""
    return event_name.startswith(FULL_SYNC_PREFIX) or bool(from_full_sync)


class LabelModel(BaseModel):
    """Base of the label payloads: unknown fields ignored, frozen."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    label_id: LabelId
    from_full_sync: bool | None = None
    ts: Number | None = None

    @property
    def key(self) -> str:
        """The label id as text (``5`` and ``"5"`` are the same label)."""
        return str(self.label_id)


class LabelEdit(LabelModel):
    """``data`` of ``labels.edit`` / ``appstate.label.edit``."""

    name: str | None = None
    color: Number | None = None
    deleted: bool | None = None


class LabelChat(LabelModel):
    """``data`` of ``labels.association.chat`` (and its ``appstate`` twin)."""

    chat: str
    labeled: bool


class LabelMessage(LabelChat):
    """``data`` of ``labels.association.message`` (and its ``appstate`` twin)."""

    message_id: str

    @property
    def message_key(self) -> str | None:
        """The message id in normalised letter case."""
        return normalise_message_id(self.message_id)
