"""What a run's page and the overview read besides the tallies: every read bounded.

Hot: the dashboard reads a run's view every second while a page is open (issue 23: at
most 200 ms of server time on a run of 1,000,000 rows), so nothing here scans a run's
rows. Each statement says which index bounds it:

- sends of the last minutes per sender and per worker: ``ix_deliveries_sender_dispatched``
  (sender, dispatched_at), a range of the minutes asked for;
- the last send: the run's newest minute in ``run_minutes`` (its primary key), then the
  sends of that minute through the sender index;
- errors: the newest :data:`ERROR_SAMPLE` rows of each error state through
  ``ix_deliveries_claim`` (run_id, state, seq), walked backwards;
- events: the ledger's newest :data:`EVENT_LOOKBACK` events (primary key), each matched to
  its delivery through ``ix_deliveries_msgid``; replies through ``replies.run_id``; the
  recipient's CSV values (``deliveries.variables``) only for the rows kept (the limited
  rows in a subquery, then one lookup each: the message id index, or the primary key);
- the next due row among the first :data:`DUE_SAMPLE` planned rows in plan order.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, and_, func, select, text, union_all

from scheduler.ledger.models import Run
from scheduler.ledger.queries.channel_counts import SMS_NOT_DELIVERED
from scheduler.ledger.queries.common import details_key
from scheduler.ledger.queries.tables import deliveries, events, replies, runs
from scheduler.ledger.run_rows import ErrorRow, EventRow, RecentSends, SmsFailureRow
from scheduler.ledger.states import DeliveryState as S

#: Failed rows read per error state to group errors by message (the newest first).
ERROR_SAMPLE = 1_000
#: How many of the ledger's newest events are looked at for a run's recent events.
EVENT_LOOKBACK = 2_000
#: Planned rows (in plan order) looked at for the next due time.
DUE_SAMPLE = 5_000


def _aware(moment: Any) -> datetime | None:
    if not isinstance(moment, datetime):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def run_by_id(conn: Connection, run_id: int) -> Run | None:
    """The run ``run_id`` (None when there is none)."""
    row = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
    return Run(**row) if row is not None else None


def newest_runs(conn: Connection, limit: int) -> list[Run]:
    """The ``limit`` newest runs, newest first (the primary key, walked backwards)."""
    rows = conn.execute(select(runs).order_by(runs.c.id.desc()).limit(limit)).mappings()
    return [Run(**row) for row in rows]


def runs_by_status(conn: Connection) -> dict[str, int]:
    """Every run counted by status (``runs`` has a row per run: small)."""
    stmt = select(runs.c.status, func.count()).group_by(runs.c.status)
    return {str(status): int(n) for status, n in conn.execute(stmt)}


def _of_run(run_id: int) -> Any:
    """``run_id = :run`` written so that no index on ``run_id`` can serve it (``run_id +
    0``): SQLite would otherwise walk the run's rows by the claim index, a million of
    them, instead of the last minutes of the sender index."""
    return (deliveries.c.run_id + 0) == run_id


def _recent(conn: Connection, run_id: int, senders: Collection[str],
            since: datetime) -> list[tuple[str, str | None, int, datetime | None]]:
    """``(sender, worker, sends, newest)`` of the run's sends at or after ``since``
    through ``senders``: a range of the sender index per sender (a row back in
    ``planned`` is no send)."""
    if not senders:
        return []
    d = deliveries.c
    stmt = (select(d.sender, d.worker, func.count(), func.max(d.dispatched_at))
            .where(d.sender.in_(sorted(set(senders))), d.dispatched_at >= since,
                   _of_run(run_id), d.state != S.PLANNED)
            .group_by(d.sender, d.worker))
    return [(str(s), w, int(n), _aware(at)) for s, w, n, at in conn.execute(stmt)]


def _fold(rows: list[tuple[str, int, datetime | None]]) -> dict[str, RecentSends]:
    out: dict[str, RecentSends] = {}
    for key, n, at in rows:
        old = out.get(key, RecentSends(0, None))
        newest = max((t for t in (old.last_at, at) if t is not None), default=None)
        out[key] = RecentSends(old.n + n, newest)
    return out


def recent_sends(conn: Connection, run_id: int, senders: Collection[str],
                 since: datetime) -> dict[str, RecentSends]:
    """Each of ``senders``' sends of the run at or after ``since`` (the sender index)."""
    return _fold([(s, n, at) for s, _w, n, at in _recent(conn, run_id, senders, since)])


def recent_sends_and_workers(conn: Connection, run_id: int, senders: Collection[str],
                             since: datetime
                             ) -> tuple[dict[str, RecentSends], dict[str, RecentSends]]:
    """:func:`recent_sends`, and each worker's sends of the run in the same range (rows
    claimed by no worker left out), from one read of it."""
    rows = _recent(conn, run_id, senders, since)
    return (_fold([(s, n, at) for s, _w, n, at in rows]),
            _fold([(w, n, at) for _s, w, n, at in rows if w is not None]))


def dispatched_since(conn: Connection, senders: Collection[str],
                     since: datetime) -> dict[str, int]:
    """Rows dispatched through each of ``senders`` at or after ``since``, every run (the
    overview's sends today per sender): an index-only count of the sender index, as many
    entries as the day's sends; unlike ``sender_profiles.sends_since`` a retry waiting in
    ``planned`` counts (its state is not in the index: reading it costs 8 times more)."""
    if not senders:
        return {}
    d = deliveries.c
    stmt = (select(d.sender, func.count())
            .where(d.sender.in_(sorted(set(senders))), d.dispatched_at >= since)
            .group_by(d.sender))
    found = {str(s): int(n) for s, n in conn.execute(stmt)}
    return {s: found.get(s, 0) for s in senders}


_LAST_MINUTE = text("SELECT minute FROM run_minutes WHERE run_id = :run GROUP BY minute "
                    "HAVING SUM(n) > 0 ORDER BY minute DESC LIMIT 1")


def last_send_minute(conn: Connection, run_id: int) -> datetime | None:
    """The UTC minute of the run's newest send, from ``run_minutes`` (its primary key
    walked backwards); None before the first send."""
    found = conn.execute(_LAST_MINUTE, {"run": run_id}).scalar()
    if found is None:
        return None
    if isinstance(found, str):  # SQLite: "YYYY-MM-DD HH:MM"
        return datetime.fromisoformat(found).replace(tzinfo=UTC)
    return _aware(found)


def last_send(conn: Connection, run_id: int, senders: Collection[str]) -> datetime | None:
    """When the run's newest send left: its newest minute, then that minute's sends
    through the sender index (the minute itself when its rows went through no sender)."""
    minute = last_send_minute(conn, run_id)
    if minute is None:
        return None
    found = recent_sends(conn, run_id, senders, minute)
    newest = max((s.last_at for s in found.values() if s.last_at is not None), default=None)
    return newest or minute


def newest_errors(conn: Connection, run_id: int, states: Sequence[str],
                  sample: int = ERROR_SAMPLE) -> list[ErrorRow]:
    """The run's rows in ``states`` grouped by message, over the newest ``sample`` rows of
    each state (the claim index, walked backwards; one statement for every state), most
    first."""
    if not states:
        return []
    d = deliveries.c
    newest = union_all(*(
        select(select(d.state, d.last_error, d.reason, d.failed_at, d.updated_at)
               .where(d.run_id == run_id, d.state == state)
               .order_by(d.seq.desc()).limit(sample).subquery())
        for state in states)).subquery()
    message = func.coalesce(newest.c.last_error, newest.c.reason, "")
    when = func.max(func.coalesce(newest.c.failed_at, newest.c.updated_at))
    stmt = select(newest.c.state, message, func.count(), when).group_by(newest.c.state,
                                                                      message)
    out = [ErrorRow(str(st), str(m), int(n), _aware(at)) for st, m, n, at in conn.execute(stmt)]
    return sorted(out, key=lambda e: (-e.n, e.state, e.message))


def recent_events(conn: Connection, run_id: int, limit: int = 20,
                  lookback: int = EVENT_LOOKBACK) -> list[EventRow]:
    """The run's newest events among the ledger's newest ``lookback`` (each matched to a
    delivery of the run by its message id), newest first, with that delivery's CSV
    values (read for the ``limit`` rows kept only). One statement: the events' primary
    key walked backwards from the newest, each probed in ``ix_deliveries_msgid``, stopping
    at the ``limit``-th of the run (PostgreSQL: 20 probes, 0.2 ms, where matching all
    ``lookback`` events first and sorting them took 15 ms at 1,000,000 rows)."""
    e, d = events.c, deliveries.c
    top = select(func.max(e.id)).scalar_subquery()
    of_run = select(d.id).where(d.message_id_norm == e.message_id_norm, d.run_id == run_id)
    variables = (select(d.variables)
                 .where(d.message_id_norm == e.message_id_norm, d.run_id == run_id)
                 .order_by(d.id).limit(1).scalar_subquery())
    stmt = (select(e.id, e.event, func.coalesce(e.occurred_at, e.received_at), e.number,
                   e.payload, variables)
            .where(e.id > top - lookback, e.message_id_norm.is_not(None), of_run.exists())
            .order_by(e.id.desc()).limit(limit))
    return [EventRow(int(i), str(ev), _aware(at), num, payload, names)
            for i, ev, at, num, payload, names in conn.execute(stmt)]


def recent_replies(conn: Connection, run_id: int, limit: int = 20) -> list[EventRow]:
    """The run's newest replies (``replies.run_id``), newest first; ``payload`` is the
    reply's text, ``event`` its kind (``opt_out`` for one that opted out), ``variables``
    its delivery's CSV values (read for the ``limit`` rows kept only)."""
    r, d = replies.c, deliveries.c
    kept = (select(r.id, r.kind, r.received_at, r.number, r.text, r.opt_out, r.delivery_id)
            .where(r.run_id == run_id).order_by(r.id.desc()).limit(limit).subquery("kept"))
    variables = select(d.variables).where(d.id == kept.c.delivery_id).scalar_subquery()
    stmt = select(kept.c.id, kept.c.kind, kept.c.received_at, kept.c.number, kept.c.text,
                  kept.c.opt_out, variables).order_by(kept.c.id.desc())
    return [EventRow(int(i), "opt_out" if opt else f"reply.{kind}", _aware(at), num, body,
                     names)
            for i, kind, at, num, body, opt, names in conn.execute(stmt)]


def next_due(conn: Connection, run_id: int, sample: int = DUE_SAMPLE) -> datetime | None:
    """The earliest ``due_at`` among the first ``sample`` planned rows in plan order (the
    claim index; the dispatcher takes rows in that order): None when none is due at all
    (a later step waits for its first)."""
    d = deliveries.c
    first = (select(d.due_at).where(d.run_id == run_id, d.state == S.PLANNED)
             .order_by(d.seq).limit(sample).subquery())
    return _aware(conn.execute(select(func.min(first.c.due_at))).scalar())


def verifying_until(conn: Connection, run_id: int) -> tuple[int, datetime | None]:
    """Rows being sent or verified (``dispatching``; the claim index), and when the first
    verification ends (its ``due_at``; None when none is being verified)."""
    d = deliveries.c
    n, until = conn.execute(
        select(func.count(), func.min(d.due_at))
        .where(and_(d.run_id == run_id, d.state == S.DISPATCHING))).one()
    return int(n or 0), _aware(until)


_TODAY = text("SELECT SUM(n) FROM run_minutes WHERE minute >= :since")


def sends_since(conn: Connection, since: datetime) -> int:
    """Sends of every run since ``since`` (a whole minute, UTC), from ``run_minutes``: a
    row per run and minute, never a delivery."""
    at: Any = since.astimezone(UTC)
    if conn.dialect.name == "sqlite":
        at = at.strftime("%Y-%m-%d %H:%M")
    return int(conn.execute(_TODAY, {"since": at}).scalar() or 0)


def newest_sms_failures(conn: Connection, run_id: int,
                        sample: int = ERROR_SAMPLE) -> list[SmsFailureRow]:
    """``channel_counts.sms_failures`` over the run's newest ``sample`` undelivered rows
    (the claim index walked backwards; each row's report through ``events``' message id
    index), most first."""
    d, e = deliveries.c, events.c
    code = details_key(conn, "errorCode").as_string()
    newest = (select(d.id, d.message_id_norm, code.label("code"))
              .where(d.run_id == run_id, d.state == S.UNDELIVERED)
              .order_by(d.seq.desc()).limit(sample).subquery())
    report = (select(func.max(e.event)).where(e.message_id_norm == newest.c.message_id_norm,
                                               e.event.in_(SMS_NOT_DELIVERED))
              .scalar_subquery())
    per_row = select(report.label("event"), newest.c.code).subquery()
    n = func.count().label("n")
    rows = conn.execute(select(per_row.c.event, per_row.c.code, n)
                        .group_by(per_row.c.event, per_row.c.code)
                        .order_by(n.desc(), per_row.c.event, per_row.c.code)).all()
    return [SmsFailureRow(event, code_, int(count)) for event, code_, count in rows]


def step_kinds(conn: Connection, run_id: int, steps: Sequence[int]) -> list[str]:
    """The kind of each of ``steps`` (``text``, ``poll``, ``list`` …): any one row's (every
    row of a step has its kind). A recipient's steps are planned together, so the first
    row of each step found is among the run's first: ask only for steps that have rows."""
    d = deliveries.c
    out = []
    for step in steps:
        found = conn.execute(select(d.kind).where(d.run_id == run_id, d.step == step)
                             .limit(1)).scalar()
        if found is not None:
            out.append(str(found))
    return out

