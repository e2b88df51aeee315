"""The grouped reads ``/metrics`` needs that no view made yet, all over small tables.

- :func:`deliveries_by_channel`: every run's rows by channel and state, summed from the
  trigger-kept ``run_tallies`` (a few dozen counters per run and shard), never from
  ``deliveries``;
- :func:`sender_groups`: every run's rows per sender by status group, from
  ``run_sender_tallies`` (the counters ``campaign status --json`` reads per run);
- :func:`unfinished_runs`: the runs not finished (``runs`` has one row per run);
- :func:`finished_durations`: how long each finished run took, by channel and status.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, select, text

from scheduler.ledger.models import Run
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


def deliveries_by_channel(conn: Connection) -> dict[tuple[str, str], int]:
    """``{(channel, state): rows}`` over every run (the kept tallies)."""
    return {(str(channel), str(state)): int(n)
            for channel, state, n in conn.execute(_BY_CHANNEL)}


def sender_groups(conn: Connection) -> dict[tuple[str, str], dict[str, int]]:
    """``{(channel, sender): {"sent", "failed", "unknown", "other", "replied": rows}}``
    over every run (the kept per-sender tallies)."""
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(("sent", "failed", "unknown", "other", "replied"), 0))
    for channel, sender, grp, replied, n in conn.execute(_BY_SENDER):
        counts = out[(str(channel), str(sender))]
        if grp in counts:
            counts[grp] += int(n)
        if replied:
            counts["replied"] += int(n)
    return dict(out)


def unfinished_runs(conn: Connection) -> list[Run]:
    """Runs planned, running or paused, by id."""
    rows = conn.execute(select(runs).where(runs.c.status.in_([str(s) for s in UNFINISHED]))
                        .order_by(runs.c.id)).mappings()
    return [Run(**row) for row in rows]


def aware(moment: Any) -> datetime | None:
    """A time read from the ledger, in UTC (SQLite gives naive text or times)."""
    if moment is None:
        return None
    when: datetime = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def finished_durations(conn: Connection) -> list[tuple[str, str, float]]:
    """``(channel, status, seconds from start to finish)`` of every finished run that
    started (``runs``: one row per run)."""
    stmt = select(runs.c.channel, runs.c.status, runs.c.started_at, runs.c.finished_at).where(
        runs.c.status.in_([str(s) for s in FINISHED]), runs.c.started_at.is_not(None),
        runs.c.finished_at.is_not(None))
    out = []
    for channel, status, started, finished in conn.execute(stmt):
        start, end = aware(started), aware(finished)
        if start is not None and end is not None:
            out.append((str(channel), str(status), max((end - start).total_seconds(), 0.0)))
    return out
