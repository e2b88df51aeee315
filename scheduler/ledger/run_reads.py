"""The ledger's read doors of a run's view, over the caller's snapshot connection.

``campaign status`` and ``campaign runs`` (:mod:`scheduler.views.status`), the dashboard's
run page and ``GET /api/v1/runs/{id}`` (:mod:`scheduler.views.run_view`) read a run in ONE
snapshot (:mod:`scheduler.views.reading`): the caller opens it (``access.snapshot`` or
``access.read``) and builds these doors on it, so they add no transaction and no statement.
By part of the view:

- :class:`RunReads`: the run, its trigger-kept tallies and tracking counts, its pace
  and what it waits for (:mod:`.queries.tallies`, :mod:`.queries.tracking`);
- :class:`RunSamples`: its newest errors, SMS failures, events, replies and skip reasons,
  each over a bounded sample of its newest rows;
- :class:`VerdictReads`: what its ``unknown`` verdicts and skip reasons are judged from
  (:mod:`scheduler.views.verdict_memo` keeps them while their marks stay the same);
- :class:`RunSenderReads`: its senders' profiles, their sends today and in the run, and
  when one reached its daily cap (:mod:`scheduler.views.run_senders`, ``run_waits``).

Hot: the dashboard reads a run's view every second while a page is open (issue 23: at
most 200 ms of server time on a run of 1,000,000 rows), so nothing here scans a run's
rows. Each statement says which index bounds it:

- sends of the last minutes per sender and per worker: ``ix_deliveries_sender_dispatched``
  (sender, dispatched_at), a range of the minutes asked for;
- the last send: the run's newest minute in ``run_minutes`` (its primary key), then the
  sends of that minute through the sender index;
- errors and skip reasons: the newest :data:`ERROR_SAMPLE` rows (a sample) of each state
  through ``ix_deliveries_claim`` (run_id, state, seq), walked backwards;
- events: the ledger's newest :data:`EVENT_LOOKBACK` events (primary key), each matched to
  its delivery through ``ix_deliveries_msgid``; replies through ``replies.run_id``; the
  recipient's CSV values (``deliveries.variables``) only for the rows kept (the limited
  rows in a subquery, then one lookup each: the message id index, or the primary key);
- the next due row among the first :data:`DUE_SAMPLE` planned rows in plan order.

The workers' reads are :mod:`scheduler.ledger.worker_reads`. A method that is one read of
another query module says which; the rows are plain (:mod:`.run_rows`, :mod:`.rows`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, func, select, text, union_all

from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.queries import caps, run_senders, sender_profiles, tallies
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.queries import verdict_marks as vm
from scheduler.ledger.queries.common import details_key
from scheduler.ledger.queries.tables import deliveries, events, replies, runs
from scheduler.ledger.rows import (
    Funnel,
    SenderChangeRow,
    SenderProfileRow,
    UnknownRow,
    UptimeInterval,
)
from scheduler.ledger.run_rows import (
    ErrorRow,
    EventRow,
    Marks,
    RecentSends,
    SmsFailureRow,
    Tally,
)
from scheduler.ledger.states import DeliveryState as S

#: Failed rows read per error state to group errors by message (the newest first).
ERROR_SAMPLE = 1_000
#: How many of the ledger's newest events are looked at for a run's recent events.
EVENT_LOOKBACK = 2_000
#: Planned rows (in plan order) looked at for the next due time.
DUE_SAMPLE = 5_000

_LAST_MINUTE = text("SELECT minute FROM run_minutes WHERE run_id = :run GROUP BY minute "
                    "HAVING SUM(n) > 0 ORDER BY minute DESC LIMIT 1")
_TODAY = text("SELECT SUM(n) FROM run_minutes WHERE minute >= :since")


def _aware(moment: Any) -> datetime | None:
    if not isinstance(moment, datetime):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _fold(rows: list[tuple[str, int, datetime | None]]) -> dict[str, RecentSends]:
    out: dict[str, RecentSends] = {}
    for key, n, at in rows:
        old = out.get(key, RecentSends(0, None))
        newest = max((t for t in (old.last_at, at) if t is not None), default=None)
        out[key] = RecentSends(old.n + n, newest)
    return out


def _by_kind(rows: Iterable[Any]) -> dict[str, int]:
    """``(reason, n)`` rows of skipped deliveries by the kind of their reason, most first
    (then by name, whatever order the database grouped them in). A reason is ``kind:
    detail`` (``invalid_number: too short``, ``blank_value: vencimento``, ``duplicate``):
    grouped by reason in the database, folded by kind here (the distinct reasons of a run
    are a handful of kinds times their details, never one per row)."""
    kinds: Counter[str] = Counter()
    for reason, n in rows:
        kinds[(reason or "no reason").split(":", 1)[0].strip()] += int(n)
    return dict(sorted(kinds.items(), key=lambda item: (-item[1], item[0])))


class RunReads:
    """A run and its counts on the caller's snapshot: what every read of its view asks."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def run(self, run_id: int) -> Run | None:
        """The run ``run_id`` (None when there is none)."""
        row = self.conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
        return Run(**row) if row is not None else None

    def newest(self, limit: int) -> list[Run]:
        """The ``limit`` newest runs, newest first (the primary key, walked backwards)."""
        rows = self.conn.execute(select(runs).order_by(runs.c.id.desc()).limit(limit))
        return [Run(**row) for row in rows.mappings()]

    def tally(self, run_id: int) -> Tally:
        """The run's trigger-kept counters (``tallies.read``): its counts, funnel, steps
        and workers are sums of them."""
        return tallies.read(self.conn, run_id)

    def tracking(self, run_id: int, tally: Tally) -> Funnel:
        """How far its rows got by their events (``tracking.funnel``), from ``tally`` and
        its opt-out replies."""
        return tq.funnel(self.conn, run_id, tally)

    def sends_since(self, since: datetime) -> int:
        """Sends of every run since ``since`` (a whole minute, UTC), from ``run_minutes``:
        a row per run and minute, never a delivery."""
        at: Any = since.astimezone(UTC)
        if self.conn.dialect.name == "sqlite":
            at = at.strftime("%Y-%m-%d %H:%M")
        return int(self.conn.execute(_TODAY, {"since": at}).scalar() or 0)

    def recent_sends(self, run_id: int, senders: Collection[str], since: datetime
                     ) -> tuple[dict[str, RecentSends], dict[str, RecentSends]]:
        """The run's sends at or after ``since`` through ``senders`` per sender, and per
        worker (rows claimed by no worker left out), in one read: a range of the sender
        index per sender (a row back in ``planned`` is no send). ``run_id + 0``: no index
        on ``run_id`` may serve it (SQLite would otherwise walk the run's rows by the claim
        index, a million of them, instead of the last minutes of the sender index)."""
        if not senders:
            return {}, {}
        d = deliveries.c
        stmt = (select(d.sender, d.worker, func.count(), func.max(d.dispatched_at))
                .where(d.sender.in_(sorted(set(senders))), d.dispatched_at >= since,
                       (d.run_id + 0) == run_id, d.state != S.PLANNED)
                .group_by(d.sender, d.worker))
        rows = [(str(s), w, int(n), _aware(at)) for s, w, n, at in self.conn.execute(stmt)]
        return (_fold([(s, n, at) for s, _w, n, at in rows]),
                _fold([(w, n, at) for _s, w, n, at in rows if w is not None]))

    def last_send(self, run_id: int, senders: Collection[str]) -> datetime | None:
        """When the run's newest send left (None before its first): its newest minute in
        ``run_minutes`` (its primary key walked backwards), then that minute's sends
        through the sender index (the minute itself when its rows went through no
        sender)."""
        found = self.conn.execute(_LAST_MINUTE, {"run": run_id}).scalar()
        if found is None:
            return None
        minute = (datetime.fromisoformat(found).replace(tzinfo=UTC)  # SQLite's text
                  if isinstance(found, str) else _aware(found))
        if minute is None:
            return None
        by_sender, _ = self.recent_sends(run_id, senders, minute)
        newest = max((s.last_at for s in by_sender.values() if s.last_at is not None),
                     default=None)
        return newest or minute

    def dispatching(self, run_id: int) -> tuple[int, datetime | None]:
        """Rows being sent or verified (``dispatching``; the claim index), and when the
        first verification ends (its ``due_at``; None when none is being verified)."""
        d = deliveries.c
        n, until = self.conn.execute(
            select(func.count(), func.min(d.due_at))
            .where(and_(d.run_id == run_id, d.state == S.DISPATCHING))).one()
        return int(n or 0), _aware(until)

    def next_due(self, run_id: int) -> datetime | None:
        """The earliest ``due_at`` among the first :data:`DUE_SAMPLE` planned rows in plan
        order (the claim index; the dispatcher takes rows in that order): None when none
        is due at all (a later step waits for its first)."""
        d = deliveries.c
        first = (select(d.due_at).where(d.run_id == run_id, d.state == S.PLANNED)
                 .order_by(d.seq).limit(DUE_SAMPLE).subquery())
        return _aware(self.conn.execute(select(func.min(first.c.due_at))).scalar())

    def step_kinds(self, run_id: int, steps: Sequence[int]) -> list[str]:
        """The kind of each of ``steps`` that has rows (``text``, ``poll``, ``list`` …):
        any one row's (every row of a step has its kind). A recipient's steps are planned
        together, so the first row of each step found is among the run's first: ask only
        for steps that have rows."""
        d = deliveries.c
        out = []
        for step in steps:
            found = self.conn.execute(select(d.kind).where(d.run_id == run_id, d.step == step)
                                      .limit(1)).scalar()
            if found is not None:
                out.append(str(found))
        return out


class RunSamples:
    """A run's newest rows its page shows, each read over a bounded sample."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def errors(self, run_id: int, states: Sequence[str]) -> list[ErrorRow]:
        """Its rows in ``states`` grouped by message, over the newest
        :data:`ERROR_SAMPLE` rows of each state (the claim index, walked backwards; one
        statement for every state), most first."""
        if not states:
            return []
        d = deliveries.c
        newest = union_all(*(
            select(select(d.state, d.last_error, d.reason, d.failed_at, d.updated_at)
                   .where(d.run_id == run_id, d.state == state)
                   .order_by(d.seq.desc()).limit(ERROR_SAMPLE).subquery())
            for state in states)).subquery()
        message = func.coalesce(newest.c.last_error, newest.c.reason, "")
        when = func.max(func.coalesce(newest.c.failed_at, newest.c.updated_at))
        stmt = select(newest.c.state, message, func.count(), when).group_by(newest.c.state,
                                                                          message)
        out = [ErrorRow(str(st), str(m), int(n), _aware(at))
               for st, m, n, at in self.conn.execute(stmt)]
        return sorted(out, key=lambda e: (-e.n, e.state, e.message))

    def sms_failures(self, run_id: int) -> list[SmsFailureRow]:
        """``OutcomeReads.sms_failures`` over the run's newest :data:`ERROR_SAMPLE`
        undelivered rows (the claim index walked backwards; each row's report through
        ``events``' message id index), most first."""
        # the channel outcome reads (and the conversation rows with them) for an SMS run
        # alone: a WhatsApp run's status imports none (issue 32)
        from scheduler.ledger.outcome_reads import SMS_NOT_DELIVERED

        d, e = deliveries.c, events.c
        code = details_key(self.conn, "errorCode").as_string()
        newest = (select(d.id, d.message_id_norm, code.label("code"))
                  .where(d.run_id == run_id, d.state == S.UNDELIVERED)
                  .order_by(d.seq.desc()).limit(ERROR_SAMPLE).subquery())
        report = (select(func.max(e.event))
                  .where(e.message_id_norm == newest.c.message_id_norm,
                         e.event.in_(SMS_NOT_DELIVERED)).scalar_subquery())
        per_row = select(report.label("event"), newest.c.code).subquery()
        n = func.count().label("n")
        rows = self.conn.execute(select(per_row.c.event, per_row.c.code, n)
                                 .group_by(per_row.c.event, per_row.c.code)
                                 .order_by(n.desc(), per_row.c.event, per_row.c.code)).all()
        return [SmsFailureRow(event, code_, int(count)) for event, code_, count in rows]

    def events(self, run_id: int, limit: int = 20) -> list[EventRow]:
        """The run's newest events among the ledger's newest :data:`EVENT_LOOKBACK` (each
        matched to a delivery of the run by its message id), newest first, with that
        delivery's CSV values (read for the ``limit`` rows kept only). One statement: the
        events' primary key walked backwards from the newest, each probed in
        ``ix_deliveries_msgid``, stopping at the ``limit``-th of the run (PostgreSQL: 20
        probes, 0.2 ms, where matching all the events first and sorting them took 15 ms
        at 1,000,000 rows)."""
        e, d = events.c, deliveries.c
        top = select(func.max(e.id)).scalar_subquery()
        of_run = select(d.id).where(d.message_id_norm == e.message_id_norm,
                                    d.run_id == run_id)
        variables = (select(d.variables)
                     .where(d.message_id_norm == e.message_id_norm, d.run_id == run_id)
                     .order_by(d.id).limit(1).scalar_subquery())
        stmt = (select(e.id, e.event, func.coalesce(e.occurred_at, e.received_at), e.number,
                       e.payload, variables)
                .where(e.id > top - EVENT_LOOKBACK, e.message_id_norm.is_not(None),
                       of_run.exists())
                .order_by(e.id.desc()).limit(limit))
        return [EventRow(int(i), str(ev), _aware(at), num, payload, names)
                for i, ev, at, num, payload, names in self.conn.execute(stmt)]

    def replies(self, run_id: int, limit: int = 20) -> list[EventRow]:
        """The run's newest replies (``replies.run_id``), newest first; ``payload`` is the
        reply's text, ``event`` its kind (``opt_out`` for one that opted out),
        ``variables`` its delivery's CSV values (read for the ``limit`` rows kept only)."""
        r, d = replies.c, deliveries.c
        kept = (select(r.id, r.kind, r.received_at, r.number, r.text, r.opt_out,
                       r.delivery_id)
                .where(r.run_id == run_id).order_by(r.id.desc()).limit(limit)
                .subquery("kept"))
        variables = select(d.variables).where(d.id == kept.c.delivery_id).scalar_subquery()
        stmt = select(kept.c.id, kept.c.kind, kept.c.received_at, kept.c.number,
                      kept.c.text, kept.c.opt_out, variables).order_by(kept.c.id.desc())
        return [EventRow(int(i), "opt_out" if opt else f"reply.{kind}", _aware(at), num,
                         body, names)
                for i, kind, at, num, body, opt, names in self.conn.execute(stmt)]

    def skip_kinds(self, run_id: int, sample: int) -> dict[str, int]:
        """Its newest ``sample`` skipped rows by the kind of their reason, most first (the
        claim index walked backwards)."""
        d = deliveries.c
        newest = (select(d.reason).where(d.run_id == run_id, d.state == S.SKIPPED)
                  .order_by(d.seq.desc()).limit(sample).subquery())
        return _by_kind(self.conn.execute(select(newest.c.reason, func.count())
                                          .group_by(newest.c.reason)))


class VerdictReads:
    """What a run's ``unknown`` verdicts and skip reasons are judged from."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def marks(self, run_id: int) -> Marks:
        """Every mark the kept verdicts and skip reasons depend on, in one round trip
        (``verdict_marks.read_marks``)."""
        return vm.read_marks(self.conn, run_id)

    def unknown_rows(self, run_id: int) -> list[UnknownRow]:
        """The run's ``unknown`` rows and when each was dispatched."""
        return uq.unknown_rows(self.conn, run_id)

    def uptime(self, since: datetime) -> list[UptimeInterval]:
        """When receivers alive at ``since`` or later listened, oldest first."""
        return uq.uptime_intervals(self.conn, since)

    def stray_proofs(self, run_id: int) -> set[int]:
        """The run's ``unknown`` rows a ``messages.sent`` held by no delivery may prove
        (``uptime.rows_with_stray_proof``)."""
        return uq.rows_with_stray_proof(self.conn, run_id)

    def skipped_by_kind(self, run_id: int) -> dict[str, int]:
        """Every skipped row of the run by the kind of its reason, most first: one ``GROUP
        BY reason`` over them (the claim index ``run_id, state`` finds them)."""
        d = deliveries.c
        return _by_kind(self.conn.execute(
            select(d.reason, func.count()).where(d.run_id == run_id, d.state == S.SKIPPED)
            .group_by(d.reason)))


class RunSenderReads:
    """A run's senders: their profiles, their sends, their daily caps."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def counts(self, run_id: int) -> dict[str, run_senders.RunSenderCounts]:
        """The run's rows per sender it went through: sent, failed, unknown, replies,
        opt-outs (the trigger-kept ``run_sender_tallies`` and its opt-out replies)."""
        return {sender: counts for (_run, sender), counts
                in run_senders.run_sender_counts(self.conn, [run_id]).items()}

    def profiles(self, senders: Collection[str]) -> dict[str, SenderProfileRow]:
        """The profiles of ``senders`` that have one, by sender."""
        return sender_profiles.profiles(self.conn, senders)

    def latest_changes(self, senders: Collection[str]) -> dict[str, SenderChangeRow]:
        """Each of ``senders``' latest state change, in one statement."""
        return sender_profiles.latest_changes(self.conn, senders)

    def dispatched_since(self, senders: Collection[str], since: datetime) -> dict[str, int]:
        """Rows dispatched through each of ``senders`` at or after ``since``, every run
        (the overview's sends today per sender): an index-only count of the sender index,
        as many entries as the day's sends; unlike ``sender_profiles.sends_since`` a retry
        waiting in ``planned`` counts (its state is not in the index: reading it costs 8
        times more)."""
        if not senders:
            return {}
        d = deliveries.c
        stmt = (select(d.sender, func.count())
                .where(d.sender.in_(sorted(set(senders))), d.dispatched_at >= since)
                .group_by(d.sender))
        found = {str(s): int(n) for s, n in self.conn.execute(stmt)}
        return {s: found.get(s, 0) for s in senders}

    def sent_since(self, since: datetime, senders: Collection[str]) -> dict[str, int]:
        """Sends of ``senders`` since ``since``, every run, as the daily caps count them
        (``dispatch.sent_today_by_sender``)."""
        return dq.sent_today_by_sender(self.conn, since, senders)

    def nth_send_since(self, sender: str, since: datetime, n: int) -> datetime | None:
        """When ``sender``'s ``n``-th send since ``since`` went out (None: fewer)."""
        return caps.nth_send_since(self.conn, sender, since, n)


__all__ = ["RunReads", "RunSamples", "RunSenderReads", "VerdictReads"]
