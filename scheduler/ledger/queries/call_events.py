"""WhatsApp outgoing calls, read from the stored events (no table of their own).

The receiver stores each event of an outgoing call under a ``dedupe_key`` made from the
session, the ``callId`` and the event's slot (ringing, connected, terminal, recording; see
:mod:`scheduler.tracking.call_events`), so a call's events are found by those keys through
the unique index, and a repeat of any of them was never stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from scheduler.ledger.queries.tables import events


def events_by_keys(conn: Connection, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Stored events with these ``dedupe_key`` values: key → (event name, payload)."""
    if not keys:
        return {}
    stmt = select(events.c.dedupe_key, events.c.event, events.c.payload).where(
        events.c.dedupe_key.in_(list(keys)))
    return {key: (name, payload) for key, name, payload in conn.execute(stmt)}
