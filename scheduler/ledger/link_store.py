"""The ledger as tracked links' store: a run's link numbers, a hit on a link.

:class:`LinkStore` is the door the receiver's ``GET /r/{token}``
(:mod:`scheduler.links.routes`) and the plan's binding of links
(:mod:`scheduler.usecases.link_setup`) go through; each method is one transaction or one
read of :mod:`scheduler.ledger.queries.links`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import links as lq

#: Whether a hit by the recipient ``to``, sent at ``sent_at``, is theirs and counts:
#: ``None`` (not theirs), else (counted, why not).
Judge = Callable[[str, datetime | None], tuple[bool, str | None] | None]


class LinkStore:
    """The tracked links of ``engine``'s ledger (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def run_links(self, run_id: int) -> dict[tuple[int, str], int]:
        """The run's links: (step, address) → number."""
        with access.read(self.engine, f"read the links of run {run_id}") as conn:
            return lq.run_links(conn, run_id)

    def follow(self, run_id: int, link: int, row: int, judge: Judge, *,
               user_agent: str | None, now: datetime) -> str | None:
        """The address of link ``link`` of run ``run_id``, its hit by the recipient of CSV
        row ``row`` that ``judge`` finds stored, in one transaction; ``None`` (nothing
        stored) when there is no such link or no such recipient."""
        with access.transaction(self.engine, "record a click on a tracked link") as conn:
            target = lq.link_target(conn, run_id, link)
            if target is None:
                return None
            step, url = target
            for recipient in lq.recipients_of(conn, run_id, row, step):
                verdict = judge(recipient.to, recipient.sent_at)
                if verdict is not None:
                    lq.record_click(conn, run_id=run_id, link=link,
                                    delivery_id=recipient.delivery_id, at=now,
                                    counted=verdict[0], why_not=verdict[1],
                                    user_agent=user_agent)
                    return url
        return None


__all__ = ["Judge", "LinkStore"]
