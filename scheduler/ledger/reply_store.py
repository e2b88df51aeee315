"""The replies as a store: the inbox's action on them, a person marking one handled.

:class:`ReplyStore` is the door :mod:`scheduler.usecases.reply_handling` (the dashboard's
``POST /replies/{id}/handled``) goes through; the ledger keeps who and when
(``reply_handled``), the first person's mark when two act at once. Each method is one
transaction.
"""

from __future__ import annotations

from datetime import datetime

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import inbox as iq


class ReplyStore:
    """The replies of ``engine``'s ledger (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def mark_handled(self, reply_id: int, by: str, at: datetime
                     ) -> tuple[bool, str, datetime] | None:
        """Record that ``by`` handled reply ``reply_id`` at ``at``: whether this mark is
        the one kept (False: an earlier one is), and who and when the kept mark says;
        None when the ledger holds no such reply (nothing written)."""
        with access.transaction(self.engine, f"mark reply {reply_id} as handled") as conn:
            if not iq.reply_exists(conn, reply_id):
                return None
            done = iq.mark_handled(conn, reply_id, by, at)
            found = iq.handled_by(conn, reply_id)
        assert found is not None
        return done, found[0], found[1]


__all__ = ["ReplyStore"]
