"""Events that arrived before their delivery held the message id, matched when it is stored.

The service may post ``messages.sent`` (or even a receipt) before the dispatcher has written
down the ``messageId`` of its answer: the event is then stored ``unmatched``. The dispatcher
calls :func:`match_early_events` in the transaction that records the accepted sends, right
after :func:`~scheduler.ledger.queries.dispatch.record_accepted` (which took the matching
lock), so
such an event moves its delivery in the same commit: ``sent`` with the event's time, on
every database and whatever the timing.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import events as eq
from scheduler.tracking.apply import MATCHED_BY_ID, Applied, ApplyContext, apply_batch
from scheduler.tracking.call_events import CALL_EVENTS
from scheduler.tracking.reload import load_stored
from scheduler.tracking.replies import OptOutWords

#: The events matched to a delivery by message id alone.
EARLY_EVENTS = ("messages.sent", *MATCHED_BY_ID, *CALL_EVENTS)
#: Only sends and receipts are loaded here: no reply, so no opt-out word is ever needed.
_CTX = ApplyContext(OptOutWords(()))


def match_early_events(conn: Connection, message_ids: Iterable[str | None],
                       now: datetime) -> Applied:
    """Apply the stored, unmatched events about ``message_ids`` (just stored on their
    deliveries, in the caller's transaction); their ``result`` is updated."""
    norms = {m.lower() for m in message_ids if m}  # as record_accepted stores them
    if not norms:
        return Applied()
    stored = eq.unmatched_events_for(conn, norms, EARLY_EVENTS)
    if not stored:
        return Applied()
    loaded, _ = load_stored(conn, stored, now)  # one that no longer parses: said, left
    applied = apply_batch(conn, loaded, _CTX, now)
    eq.mark_events_applied(conn, sorted(applied.results.items()), now)
    return applied
