"""Read side of tracking: a run's funnel and the stored events (for status and the CLI).

These reads are not on a hot path, so they live here rather than in
:mod:`scheduler.ledger.queries`; SQLAlchemy errors become ``LedgerError`` here too.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, case, func, or_, select
from sqlalchemy.exc import SQLAlchemyError

from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.queries import deliveries, events, replies
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S

_SENT = (S.SENT, S.DELIVERED, S.READ, S.UNDELIVERED, S.ANSWERED, S.NOT_ANSWERED)


def _count(cond: Any) -> Any:
    return func.coalesce(func.sum(case((cond, 1), else_=0)), 0)


def _funnel(conn: Connection, run_id: int) -> dict[str, int]:
    d = deliveries.c
    row = conn.execute(select(
        _count(or_(d.sent_at.is_not(None), d.state.in_(_SENT))),
        _count(or_(d.delivered_at.is_not(None), d.state.in_((S.DELIVERED, S.READ,
                                                              S.ANSWERED)))),
        _count(or_(d.read_at.is_not(None), d.state == S.READ)),
        _count(d.replied_at.is_not(None)),
    ).where(d.run_id == run_id)).one()
    opted = conn.execute(select(func.count(func.distinct(replies.c.number))).where(
        replies.c.run_id == run_id, replies.c.opt_out.is_(True))).scalar()
    return {"sent": int(row[0]), "delivered": int(row[1]), "read": int(row[2]),
            "replied": int(row[3]), "opted_out": int(opted or 0)}


def tracking_counts(ledger: Ledger, run_id: int) -> dict[str, int]:
    """``{sent, delivered, read, replied, opted_out}`` of a run (each includes the next:
    a read message was also delivered and sent; opted out counts numbers)."""
    try:
        with ledger.engine.connect() as conn:
            return _funnel(conn, run_id)
    except SQLAlchemyError as exc:
        raise LedgerError(f"could not count the events of run {run_id}: {exc}") from None


def _events(conn: Connection, run_id: int | None, after_id: int,
            last: int | None) -> list[dict[str, Any]]:
    stmt = select(events).where(events.c.id > after_id)
    if run_id is not None:  # about the run: one of its message ids, or a reply to it
        held = select(deliveries.c.message_id_norm).where(
            deliveries.c.run_id == run_id, deliveries.c.message_id_norm.is_not(None))
        replied = select(replies.c.event_id).where(replies.c.run_id == run_id)
        stmt = stmt.where(or_(events.c.message_id_norm.in_(held), events.c.id.in_(replied)))
    if last is not None:
        stmt = stmt.order_by(events.c.id.desc()).limit(last)
        return [dict(r) for r in reversed(list(conn.execute(stmt).mappings()))]
    return [dict(r) for r in conn.execute(stmt.order_by(events.c.id)).mappings()]


def stored_events(ledger: Ledger, *, run_id: int | None = None, after_id: int = 0,
                  last: int | None = None) -> list[dict[str, Any]]:
    """Stored events, oldest first (only the newest ``last`` when given)."""
    try:
        with ledger.engine.connect() as conn:
            return _events(conn, run_id, after_id, last)
    except SQLAlchemyError as exc:
        raise LedgerError(f"could not read the stored events: {exc}") from None


def event_json(row: dict[str, Any]) -> dict[str, Any]:
    """A stored event as JSON-ready data, its payload decoded."""
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()
           if k not in ("payload", "dedupe_key")}
    try:
        out["payload"] = json.loads(row.get("payload") or "null")
    except ValueError:
        out["payload"] = row.get("payload")
    return out
