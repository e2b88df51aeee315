"""Stored events parsed again (recovery, late matches): one loop for every reload.

Events are applied again from their stored payload: at start-up (events left unapplied),
when a delivery takes a message id that events already named (the dispatcher's accepted
sends, a ``messages.sent`` that proves a row in doubt). A payload that no longer parses
(the event models changed since it was stored, or the row was edited by hand) must not stop
the others: it is left as it is, not applied, its ``result`` says why (``campaign events``
shows it) and the log has a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from scheduler.ledger.rows import StoredEvent
from scheduler.tracking.intake import Incoming, Rejected, incoming_from_payload
from scheduler.tracking.store import EventLogStore

logger = logging.getLogger("scheduler.tracking")
#: How long a result may be (the reason is cut there).
MAX_RESULT = 500


def load_stored(book: EventLogStore, rows: Iterable[StoredEvent], now: datetime
                ) -> tuple[list[tuple[int, Incoming]], dict[int, str]]:
    """The stored events ``rows`` parsed again, as ``(event id, event)`` in their order,
    and those that no longer parse with the reason, which is also put in their ``result``
    (in ``book``, the caller's transaction)."""
    loaded: list[tuple[int, Incoming]] = []
    broken: dict[int, str] = {}
    for event_id, payload in rows:
        try:
            loaded.append((event_id, incoming_from_payload(payload, now)))
        except (Rejected, ValueError) as exc:  # its shape (422), or not JSON any more
            broken[event_id] = f"error: stored payload does not parse: {exc}"[:MAX_RESULT]
            logger.warning("stored event %s could not be parsed again: %s", event_id, exc)
            book.note_result(event_id, broken[event_id])
    return loaded, broken
