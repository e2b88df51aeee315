"""What each sender did in given runs, and its state changes over a time span: what
``campaign status`` and the report's Senders sheet show beside the senders' profiles.

:func:`run_sender_counts` reads the trigger-kept counters of :mod:`sender_tallies` (a few
rows per run and sender; it was a ``GROUP BY`` over the runs' rows: 1.9 s on a 1,000,000-row
run, issue 32) and one join of the runs' opt-out replies; :func:`changes_during` reads the
history rows of the given senders in the span only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select

from scheduler.ledger.access import Connection
from scheduler.ledger.queries import sender_tallies
from scheduler.ledger.queries.tables import deliveries, replies, sender_state_changes
from scheduler.ledger.rows import SenderChangeRow


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
    """Each (run, sender) of the runs' rows that went through a sender, with its counts:
    sent, failed, unknown and replied from the trigger-kept ``run_sender_tallies``
    (:mod:`sender_tallies`), opt-outs from the runs' replies that opted out."""
    if not run_ids:
        return {}
    d, r = deliveries.c, replies.c
    ids = sorted(set(run_ids))
    out = {key: RunSenderCounts(c["sent"], c["failed"], c["unknown"], c["replies"])
           for key, c in sender_tallies.read(conn, ids).items()}
    # the runs' replies that opted out, each row once: read through the replies' run_id
    # index (a reply's run is its delivery's, both set by the receiver from one row);
    # "d.run_id + 0" keeps SQLite from walking the runs' rows by the claim index instead
    # (0.75 s for a 1,000,000-row run)
    opted = conn.execute(
        select(d.run_id, d.sender, func.count(func.distinct(r.delivery_id)))
        .select_from(replies.join(deliveries, d.id == r.delivery_id))
        .where(r.run_id.in_(ids), (d.run_id + 0).in_(ids), d.sender.is_not(None),
               d.sender != "", r.opt_out.is_(True)).group_by(d.run_id, d.sender))
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
