"""Each session's last known status, read from its stored ``connection.status`` events.

Why a query over ``events`` and no ``sessions`` table: the receiver already stores every
event once (``dedupe_key``), so the latest ``connection.status`` of a session *is* its last
status; a table kept beside it would be a second copy to keep in step (and a migration).
Status events are rare (a few per session per day, against thousands of message events),
and the ``event`` column is indexed, so the scan reads only them. "Latest" is by the event's
own time (``occurred_at``, else ``received_at``), then by id: webhook deliveries may be
retried, delayed or reordered, and a ``disconnected`` that arrives after the ``connected``
that followed it must not win.

Read by the dispatcher at its control poll (``dispatch/sessions_live.py``), every half
second of a run, and by ``campaign sessions status``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, select

from scheduler.ledger.queries.tables import events
from scheduler.ledger.rows import SessionStatusRow

#: The event whose payload says a session's status (``data.status``).
STATUS_EVENT = "connection.status"


def _status_of(payload: str) -> tuple[str | None, str | None]:
    """``(data.status, data.reason)`` of a stored event (None when it has none)."""
    try:
        data = json.loads(payload).get("data")
    except (ValueError, AttributeError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    status, reason = data.get("status"), data.get("reason")
    return (status if isinstance(status, str) and status else None,
            reason if isinstance(reason, str) else None)


def latest_statuses(conn: Connection, session_ids: Sequence[str] | None = None, *,
                    since: datetime | None = None) -> dict[str, SessionStatusRow]:
    """The latest ``connection.status`` of each session (of ``session_ids``; all when None),
    among the events received at or after ``since`` (all when None)."""
    stmt = select(events.c.id, events.c.session_id, events.c.occurred_at,
                  events.c.received_at, events.c.payload).where(
        events.c.event == STATUS_EVENT, events.c.session_id.is_not(None))
    if session_ids is not None:
        if not session_ids:
            return {}
        stmt = stmt.where(events.c.session_id.in_(list(session_ids)))
    if since is not None:
        stmt = stmt.where(events.c.received_at >= since)
    latest: dict[str, SessionStatusRow] = {}
    for event_id, session_id, occurred_at, received_at, payload in conn.execute(stmt):
        status, reason = _status_of(payload)
        if status is None:
            continue
        row = SessionStatusRow(session_id, status, reason, occurred_at or received_at,
                               received_at, event_id)
        held = latest.get(session_id)
        if held is None or (row.at, row.event_id) > (held.at, held.event_id):
            latest[session_id] = row
    return latest
