"""The reads across every run at once: the runs by status, every run's rows by channel
and per sender, the unfinished runs, the finished runs' durations, the outgoing webhooks'
backlog.

:class:`OverviewReads` is the door ``/metrics`` (:mod:`scheduler.metrics.collector` and
:mod:`scheduler.metrics.outbox`) and the dashboard's overview (:mod:`scheduler.views.
overview`: its runs by status) read through, on the caller's snapshot; all over small
tables:

- :meth:`~OverviewReads.deliveries_by_channel`: every run's rows by channel and state,
  summed from the trigger-kept ``run_tallies`` (a few dozen counters per run and shard),
  never from ``deliveries``;
- :meth:`~OverviewReads.sender_groups`: every run's rows per sender by status group, from
  ``run_sender_tallies`` (the counters ``campaign status --json`` reads per run);
- :meth:`~OverviewReads.unfinished_runs`: the runs not finished (``runs`` has one row per
  run);
- :meth:`~OverviewReads.finished_durations`: how long each finished run took, by channel
  and status.

One run's view is :mod:`scheduler.ledger.run_reads`; the senders' profiles
:mod:`scheduler.ledger.sender_reads`.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, text

from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.queries import outbox as oq
from scheduler.ledger.queries.tables import runs
from scheduler.ledger.states import RunStatus

#: Runs that are not finished: their own series (``run`` label) stay bounded by these.
UNFINISHED = (RunStatus.PLANNED, RunStatus.RUNNING, RunStatus.PAUSED)
#: Finished runs whose duration is counted.
FINISHED = (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)

_BY_CHANNEL = text(
    "SELECT r.channel, t.state, SUM(t.n) FROM run_tallies t JOIN runs r ON r.id = t.run_id "
    "GROUP BY r.channel, t.state HAVING SUM(t.n) <> 0")
_BY_SENDER = text(
    "SELECT r.channel, t.sender, t.grp, t.replied, SUM(t.n) FROM run_sender_tallies t "
    "JOIN runs r ON r.id = t.run_id GROUP BY r.channel, t.sender, t.grp, t.replied "
    "HAVING SUM(t.n) <> 0")


def aware(moment: Any) -> datetime | None:
    """A time read from the ledger, in UTC (SQLite gives naive text or times)."""
    if moment is None:
        return None
    when: datetime = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class OverviewReads:
    """Every run's and every subscription's figures, read on ``conn`` (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def runs_by_status(self) -> dict[str, int]:
        """Every run counted by status (``runs`` has a row per run: small)."""
        stmt = select(runs.c.status, func.count()).group_by(runs.c.status)
        return {str(status): int(n) for status, n in self.conn.execute(stmt)}

    def unfinished_runs(self) -> list[Run]:
        """Runs planned, running or paused, by id (also the outgoing webhooks' judge of
        each unfinished run, :meth:`scheduler.ledger.outbox_store.OutboxStore.stuck_runs`)."""
        rows = self.conn.execute(select(runs).where(
            runs.c.status.in_([str(s) for s in UNFINISHED])).order_by(runs.c.id)).mappings()
        return [Run(**row) for row in rows]

    def deliveries_by_channel(self) -> dict[tuple[str, str], int]:
        """``{(channel, state): rows}`` over every run (the kept tallies)."""
        return {(str(channel), str(state)): int(n)
                for channel, state, n in self.conn.execute(_BY_CHANNEL)}

    def sender_groups(self) -> dict[tuple[str, str], dict[str, int]]:
        """``{(channel, sender): {"sent", "failed", "unknown", "other", "replied": rows}}``
        over every run (the kept per-sender tallies)."""
        out: dict[tuple[str, str], dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(("sent", "failed", "unknown", "other", "replied"), 0))
        for channel, sender, grp, replied, n in self.conn.execute(_BY_SENDER):
            counts = out[(str(channel), str(sender))]
            if grp in counts:
                counts[grp] += int(n)
            if replied:
                counts["replied"] += int(n)
        return dict(out)

    def finished_durations(self) -> list[tuple[str, str, float]]:
        """``(channel, status, seconds from start to finish)`` of every finished run that
        started (``runs``: one row per run)."""
        stmt = select(runs.c.channel, runs.c.status, runs.c.started_at,
                      runs.c.finished_at).where(
            runs.c.status.in_([str(s) for s in FINISHED]), runs.c.started_at.is_not(None),
            runs.c.finished_at.is_not(None))
        out = []
        for channel, status, started, finished in self.conn.execute(stmt):
            start, end = aware(started), aware(finished)
            if start is not None and end is not None:
                out.append((str(channel), str(status),
                            max((end - start).total_seconds(), 0.0)))
        return out

    def outbox_backlog(self) -> tuple[int, dict[str, tuple[int, datetime | None]]]:
        """Outgoing webhook events not given out yet, and per subscription its pending
        rows and the oldest's event time (``outbox.backlog``)."""
        return oq.backlog(self.conn)

    def outbox_counts(self, now: datetime) -> dict[tuple[str, str], int]:
        """Outgoing webhook deliveries per (subscription, state) (``outbox.counts``)."""
        return oq.counts(self.conn, now)
