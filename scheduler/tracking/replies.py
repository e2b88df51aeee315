"""Replies: what a recipient wrote back, and whether it is an opt-out.

An opt-out is a reply whose whole text, once folded, is one of the configured words:
case, accents, surrounding punctuation and spacing are ignored ("Sair", " PARAR! ",
"stop.", "Descadastrár"), but a word inside a sentence is not an opt-out ("não quero
sair de casa").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.core.folding import fold
from scheduler.service.event_data import ListResponseData, MessageData, PollUpdateData


class OptOutWords:
    """The configured opt-out words, folded once; ``matches(text)`` checks a whole reply."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(w for w in (fold(word) for word in words) if w)

    def matches(self, text: str | None) -> bool:
        """Whether ``text`` as a whole is an opt-out word."""
        return bool(text) and fold(text or "") in self.words


def _first_text(values: Iterable[Any]) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip():
            return value
    return None


def reply_text(data: MessageData) -> str | None:
    """The text of a reply: the message, else what a vote, list row or button carries."""
    typed = data.data
    if isinstance(typed, PollUpdateData) and typed.selected_options:
        return ", ".join(typed.selected_options)
    if isinstance(typed, ListResponseData):
        return _first_text((data.message, typed.title, typed.row_id))
    extra = typed if isinstance(typed, dict) else {}
    if data.type == "poll_update":
        selected = extra.get("selected_options") or extra.get("selectedOptions")
        if isinstance(selected, list) and selected:
            return ", ".join(str(s) for s in selected)
    elif data.type == "list_response":
        return _first_text((data.message, extra.get("title"), extra.get("row_id")))
    elif data.type == "template_button_reply":
        return _first_text((data.message, extra.get("selected_display_text"),
                            extra.get("display_text"), extra.get("title"),
                            extra.get("selected_id"), extra.get("id")))
    caption = getattr(data.media_data, "caption", None) if data.media_data else None
    return _first_text((data.message, data.body, caption))


def reply_choices(data: MessageData) -> list[str]:
    """What a reply chose besides its text: poll options, a list row's id and title, a
    button's id and text (conditions match on these too); empty for a plain message."""
    typed = data.data
    if isinstance(typed, PollUpdateData):
        return [str(o) for o in typed.selected_options]
    if isinstance(typed, ListResponseData):
        return [v for v in (typed.row_id, typed.title) if v]
    extra = typed if isinstance(typed, dict) else {}
    keys: tuple[str, ...] = ()
    if data.type == "poll_update":
        selected = extra.get("selected_options") or extra.get("selectedOptions")
        return [str(s) for s in selected] if isinstance(selected, list) else []
    if data.type == "list_response":
        keys = ("row_id", "title")
    elif data.type in ("template_button_reply", "buttons_response", "button_reply"):
        keys = ("selected_id", "id", "selected_display_text", "display_text", "title")
    return [str(extra[k]) for k in keys if isinstance(extra.get(k), str | int) and extra[k]]
