"""Why a run's deliveries were skipped, by kind of reason (``campaign status``).

A reason is ``kind: detail`` (``invalid_number: too short``, ``blank_value: vencimento``,
``duplicate``); status shows the kinds. One ``GROUP BY reason`` over the run's skipped rows
(the claim index ``run_id, state`` finds them), folded by kind in Python: the distinct
reasons of a run are a handful of kinds times their details, never one per row.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import Connection, func, select

from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.states import DeliveryState as S


def skipped_by_kind(conn: Connection, run_id: int) -> dict[str, int]:
    """Skipped deliveries of the run by the kind of their reason, most first (then by
    name, whatever order the database grouped them in)."""
    stmt = (select(deliveries.c.reason, func.count())
            .where(deliveries.c.run_id == run_id, deliveries.c.state == S.SKIPPED)
            .group_by(deliveries.c.reason))
    kinds: Counter[str] = Counter()
    for reason, n in conn.execute(stmt):
        kinds[(reason or "no reason").split(":", 1)[0].strip()] += int(n)
    return dict(sorted(kinds.items(), key=lambda item: (-item[1], item[0])))
