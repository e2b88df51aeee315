"""The inbox's SQL: a reply's state, and who handled a reply and when.

A reply's state (:data:`STATE`): ``handled`` once a person marked it; otherwise ``to
answer`` when a person should read it, else ``new``. "To answer" is the ``replies.
to_answer`` flag where the ledger has it (migration 0019: set on a reply that opts out of
nothing, cleared when a step's condition takes it); on a ledger model without it, a reply
that is not an opt-out (:data:`TO_ANSWER`, the one seam to change).

The inbox's reads (replies across runs, counts per state) are
:mod:`scheduler.ledger.inbox_reads`; :func:`mark_handled` records who handled a reply and
when (``reply_handled``, its primary key the reply's id: marking again keeps the first).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, not_, select

from scheduler.ledger.inbox_models import reply_handled
from scheduler.ledger.queries.common import insert_or_ignore
from scheduler.ledger.queries.tables import replies

#: A reply a person should read (see the module): the conditional steps' flag where the
#: reply table has it, else "not an opt-out" (handled replies are left out by the state).
TO_ANSWER: Any = (replies.c.to_answer.is_(True) if "to_answer" in replies.c
                  else not_(replies.c.opt_out))

#: A reply a person marked handled.
HANDLED: Any = reply_handled.c.reply_id.is_not(None)
#: The state as SQL (``handled``, ``to answer``, ``new``).
STATE: Any = case((HANDLED, "handled"), (TO_ANSWER, "to answer"), else_="new")


def reply_exists(conn: Connection, reply_id: int) -> bool:
    """Whether the ledger holds reply ``reply_id``."""
    return conn.execute(select(replies.c.id).where(replies.c.id == reply_id)).first() \
        is not None


def mark_handled(conn: Connection, reply_id: int, by: str, at: datetime) -> bool:
    """Record that ``by`` handled reply ``reply_id`` at ``at``; False when it was already
    (the first person and time are kept)."""
    stmt = insert_or_ignore(conn.dialect.name, reply_handled).values(
        reply_id=reply_id, handled_by=by, handled_at=at).on_conflict_do_nothing(
        index_elements=["reply_id"]).returning(reply_handled.c.reply_id)
    return conn.execute(stmt).first() is not None  # (rowcount: -1 on some drivers)


def handled_by(conn: Connection, reply_id: int) -> tuple[str, datetime] | None:
    """Who handled reply ``reply_id`` and when (None: nobody yet)."""
    row = conn.execute(select(reply_handled.c.handled_by, reply_handled.c.handled_at)
                       .where(reply_handled.c.reply_id == reply_id)).first()
    return (str(row[0]), row[1]) if row is not None else None

