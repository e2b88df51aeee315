"""The sessions' label state as planning and ``campaign labels`` read it.

The receiver keeps each session's labels (tracking's ``LabelStore``); a campaign's
``labels`` / ``exclude_labels`` are resolved over them (:mod:`scheduler.usecases.label_lookup`)
from one read here (:func:`label_state`); ``campaign labels`` (:mod:`scheduler.commands.labels`)
shows them with the messages they are on (:func:`label_report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import labels as lq
from scheduler.ledger.queries.labels import LabelledChat, LabelRow


def label_state(engine: Engine, sessions: Sequence[str]
                ) -> tuple[list[LabelRow], list[LabelledChat]]:
    """The labels of ``sessions`` and the chats they are on, in one read."""
    with access.read(engine, "read the sender sessions' labels") as conn:
        return lq.session_labels(conn, sessions), lq.labelled_chats(conn, sessions)


class LabelReport(NamedTuple):
    """The sessions' labels, the chats they are on and ``(session, label, chat, message
    id)`` of the messages they are on."""

    sessions: list[str]
    labels: list[LabelRow]
    chats: list[LabelledChat]
    messages: list[tuple[str, str, str, str]]


def label_report(engine: Engine, sessions: Sequence[str]) -> LabelReport:
    """The label state of ``sessions`` (every session with a stored label when none), in
    one read."""
    with access.read(engine, "read the label state") as conn:
        chosen = list(sessions) or lq.labelled_sessions(conn)
        return LabelReport(chosen, lq.session_labels(conn, chosen),
                           lq.labelled_chats(conn, chosen), lq.labelled_messages(conn, chosen))


__all__ = ["LabelReport", "LabelRow", "LabelledChat", "label_report", "label_state"]
