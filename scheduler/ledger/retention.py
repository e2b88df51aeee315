"""Retention: rendered bodies and raw event payloads older than ``[privacy]`` says are
removed, keeping every row with its states, times and counts (what reports need).

- a delivery's body (``payload``, and ``choices``: its A/B variants' payloads) goes once
  the row is settled (not planned, held or being sent) and its latest time
  (``updated_at``, else ``dispatched_at``, else ``due_at``) is older than ``keep_bodies``;
- an event's raw ``payload`` goes once it was applied and was received before
  ``keep_events``; its type, number, message id, times and result stay.

A blanked body is ``{}``, a blanked payload ``{}``: the same as an erased person's.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select, update

from scheduler.ledger.queries.tables import deliveries, events
from scheduler.ledger.states import DeliveryState as S

#: Rows whose body may still be sent: never purged.
_LIVE = (S.PLANNED, S.HELD, S.DISPATCHING)
EMPTY = "{}"


def _old_bodies(before: datetime) -> ColumnElement[bool]:
    d = deliveries.c
    latest = func.coalesce(d.updated_at, d.dispatched_at, d.due_at)
    return and_(d.state.notin_(_LIVE), latest < before,
                or_(d.payload != EMPTY, d.choices.is_not(None)))


def _old_payloads(before: datetime) -> ColumnElement[bool]:
    e = events.c
    return and_(e.applied_at.is_not(None), e.received_at < before, e.payload != EMPTY)


def count_old(conn: Connection, bodies_before: datetime | None,
              events_before: datetime | None) -> dict[str, int]:
    """How many bodies and payloads a purge would remove, per table."""
    counts = {"deliveries": 0, "events": 0}
    if bodies_before is not None:
        counts["deliveries"] = conn.execute(select(func.count()).select_from(deliveries)
                                            .where(_old_bodies(bodies_before))).scalar_one()
    if events_before is not None:
        counts["events"] = conn.execute(select(func.count()).select_from(events)
                                        .where(_old_payloads(events_before))).scalar_one()
    return counts


def purge_old(conn: Connection, bodies_before: datetime | None,
              events_before: datetime | None) -> dict[str, int]:
    """Remove them in the caller's transaction; the rows changed per table."""
    counts = {"deliveries": 0, "events": 0}
    if bodies_before is not None:
        done = conn.execute(update(deliveries).where(_old_bodies(bodies_before))
                            .values(payload=EMPTY, choices=None))
        counts["deliveries"] = done.rowcount or 0
    if events_before is not None:
        done = conn.execute(update(events).where(_old_payloads(events_before))
                            .values(payload=EMPTY))
        counts["events"] = done.rowcount or 0
    return counts
