"""The sessions' label state as planning reads it: the ledger's door for a label filter.

The receiver keeps each session's labels (tracking's ``LabelStore``); a campaign's
``labels`` / ``exclude_labels`` are resolved over them (:mod:`scheduler.usecases.label_lookup`)
from one read here.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries.labels import LabelledChat, LabelRow, labelled_chats, session_labels


def label_state(engine: Engine, sessions: Sequence[str]
                ) -> tuple[list[LabelRow], list[LabelledChat]]:
    """The labels of ``sessions`` and the chats they are on, in one read."""
    with access.read(engine, "read the sender sessions' labels") as conn:
        return session_labels(conn, sessions), labelled_chats(conn, sessions)


__all__ = ["LabelRow", "LabelledChat", "label_state"]
