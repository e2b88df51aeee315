"""Poll votes and list choices kept per delivery (in its ``details`` JSON), and read back.

A reply tied to a delivery (the poll it votes in, the list it picks from) writes its answer
on that delivery: ``pollVote`` (the selected option names) or ``listRowId`` /
``listRowTitle``, with ``answeredAt``. A person may vote again (the service sends the new
selection), and events arrive in any order: the answer with the latest time is kept (at the
same time, the greater answer by its JSON text, so the order of arrival never matters). A
read and an update of one row per answer: answers are rare beside receipts. Read by
``campaign status`` (a tally per poll or list step, :mod:`scheduler.ledger.answer_reads`)
and the reports (per delivery).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, select, update

from scheduler.ledger.queries.tables import deliveries

#: Detail keys of an answer (all of them replaced by a newer answer).
ANSWER_KEYS = ("pollVote", "listRowId", "listRowTitle", "answeredAt")


def _order(details: dict[str, Any]) -> tuple[str, str]:
    answer = {k: details.get(k) for k in ANSWER_KEYS if k != "answeredAt"}
    return str(details.get("answeredAt") or ""), json.dumps(answer, sort_keys=True)


def record_answer(conn: Connection, delivery_id: int, answer: dict[str, Any],
                  at: datetime) -> bool:
    """Keep ``answer`` on the delivery unless it holds a later one; whether it was kept."""
    raw = conn.execute(select(deliveries.c.details).where(
        deliveries.c.id == delivery_id)).scalar()
    try:
        current = json.loads(raw) if raw else {}
    except ValueError:
        current = {}
    if not isinstance(current, dict):
        current = {}
    stamp = at.astimezone(UTC).isoformat(timespec="milliseconds")
    new = {**{k: v for k, v in answer.items() if v is not None}, "answeredAt": stamp}
    if any(k in current for k in ANSWER_KEYS) and _order(new) <= _order(current):
        return False
    merged = {k: v for k, v in current.items() if k not in ANSWER_KEYS} | new
    conn.execute(update(deliveries).where(deliveries.c.id == delivery_id).values(
        details=json.dumps(merged, ensure_ascii=False, separators=(",", ":"))))
    return True
