"""A plan row as the dispatcher reads it back once stored, before it is: ``campaign plan``.

``campaign plan``'s cost tally (:mod:`scheduler.commands.plan_channels`) and its preview of
the requests (:mod:`scheduler.commands.preview`) group and price the planner's rows as the
engine will: :func:`planned_delivery` gives them the ledger's form, the payload as the JSON
text the plan stores.
"""

from __future__ import annotations

from typing import Any

from scheduler.ledger.queries.common import dumps
from scheduler.ledger.rows import DueDelivery


def planned_delivery(step: int, to: str, path: str, payload: Any, *, seq: int = 0,
                     region: str | None = None) -> DueDelivery:
    """The row the dispatcher would read back (numbered ``seq``; no sender, no attempt)."""
    return DueDelivery(id=seq, seq=seq, step=step, to=to, path=path, payload=dumps(payload),
                       sender=None, region=region, attempts=0)


__all__ = ["planned_delivery"]
