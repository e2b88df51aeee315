"""What each sender did in given runs, and its state changes over a time span: what
``campaign status`` and the report's Senders sheet show beside the senders' profiles.

Not hot: asked once by ``status`` or a report. :func:`run_sender_counts` is one ``GROUP BY``
over the runs' rows (``run_id`` index) and one join of their opt-out replies;
:func:`changes_during` reads the history rows of the given senders in the span only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import and_, case, func, select

from scheduler.ledger.access import Connection
from scheduler.ledger.queries.tables import deliveries, replies, sender_state_changes
from scheduler.ledger.rows import SenderChangeRow
from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S


class RunSenderCounts(NamedTuple):
    """One sender's rows in one run: sent (taken by the service, as the report's *Sent*),
    failed, unknown (maybe sent), replied to, and opted out after a send through it."""

    sent: int = 0
    failed: int = 0
    unknown: int = 0
    replies: int = 0
    opt_outs: int = 0


def run_sender_counts(conn: Connection, run_ids: Sequence[int]
                      ) -> dict[tuple[int, str], RunSenderCounts]:
    """Each (run, sender) of the runs' rows that went through a sender, with its counts."""
    if not run_ids:
        return {}
    d, r = deliveries.c, replies.c
    ids = sorted(set(run_ids))
    mine = and_(d.run_id.in_(ids), d.sender.is_not(None), d.sender != "")
    rows = conn.execute(
        select(d.run_id, d.sender,
               func.sum(case((d.state.in_([str(s) for s in SENT_STATES]), 1), else_=0)),
               func.sum(case((d.state == S.FAILED, 1), else_=0)),
               func.sum(case((d.state == S.UNKNOWN, 1), else_=0)),
               func.sum(case((d.replied_at.is_not(None), 1), else_=0)))
        .where(mine, d.state != S.PLANNED).group_by(d.run_id, d.sender))
    out = {}
    for run, sender, sent, failed, unknown, replied in rows:
        out[(int(run), str(sender))] = RunSenderCounts(
            int(sent or 0), int(failed or 0), int(unknown or 0), int(replied or 0))
    opted = conn.execute(
        select(d.run_id, d.sender, func.count(func.distinct(r.delivery_id)))
        .select_from(replies.join(deliveries, d.id == r.delivery_id))
        .where(mine, r.opt_out.is_(True)).group_by(d.run_id, d.sender))
    for run, sender, n in opted:
        key = (int(run), str(sender))
        out[key] = out.get(key, RunSenderCounts())._replace(opt_outs=int(n))
    return out


def changes_during(conn: Connection, senders: Collection[str], start: datetime,
                   end: datetime | None = None) -> list[SenderChangeRow]:
    """The state changes of ``senders`` at or after ``start`` (and at or before ``end``,
    when given), oldest first."""
    if not senders:
        return []
    h = sender_state_changes.c
    stmt = (select(h.id, h.sender, h.at, h.from_state, h.to_state, h.reason, h.source,
                   h.score)
            .where(h.sender.in_(sorted(set(senders))), h.at >= start).order_by(h.at, h.id))
    if end is not None:
        stmt = stmt.where(h.at <= end)
    return [SenderChangeRow(*row) for row in conn.execute(stmt)]


__all__ = ["RunSenderCounts", "changes_during", "run_sender_counts"]
