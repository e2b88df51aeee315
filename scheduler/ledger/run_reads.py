"""The ledger's read doors of a run's view, over the caller's snapshot connection.

``campaign status`` and ``campaign runs`` (:mod:`scheduler.views.status`), the dashboard's
run page and ``GET /api/v1/runs/{id}`` (:mod:`scheduler.views.run_view`) read a run in ONE
snapshot (:mod:`scheduler.views.reading`): the caller opens it (``access.snapshot`` or
``access.read``) and builds these doors on it, so they add no transaction and no statement.
By part of the view:

- :class:`RunReads`: the run, its trigger-kept tallies and tracking counts, its pace
  and what it waits for (:mod:`.queries.run_view`, :mod:`.queries.tallies`);
- :class:`RunSamples`: its newest errors, SMS failures, events, replies and skip reasons,
  each over a bounded sample of its newest rows (the skip reasons: the claim index walked
  backwards);
- :class:`VerdictReads`: what its ``unknown`` verdicts and skip reasons are judged from
  (:mod:`scheduler.views.verdict_memo` keeps them while their marks stay the same);
- :class:`RunSenderReads`: its senders' profiles, their sends today and in the run, and
  when one reached its daily cap (:mod:`scheduler.views.run_senders`, ``run_waits``).

The workers' reads are :mod:`scheduler.ledger.worker_reads`. Each method is one read of a
query module (its docstring says which), but the skip reasons', read here (their only
reader); the rows are plain (:mod:`.run_rows`, :mod:`.rows`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.queries import caps, run_senders, sender_profiles, tallies
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import run_view as vq
from scheduler.ledger.queries import tracking as tq
from scheduler.ledger.queries import uptime as uq
from scheduler.ledger.queries import verdict_marks as vm
from scheduler.ledger.queries.tables import deliveries
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
        return vq.run_by_id(self.conn, run_id)

    def newest(self, limit: int) -> list[Run]:
        """The ``limit`` newest runs, newest first."""
        return vq.newest_runs(self.conn, limit)

    def tally(self, run_id: int) -> Tally:
        """The run's trigger-kept counters (``tallies.read``): its counts, funnel, steps
        and workers are sums of them."""
        return tallies.read(self.conn, run_id)

    def tracking(self, run_id: int, tally: Tally) -> Funnel:
        """How far its rows got by their events (``tracking.funnel``), from ``tally`` and
        its opt-out replies."""
        return tq.funnel(self.conn, run_id, tally)

    def sends_since(self, since: datetime) -> int:
        """Sends of every run since ``since`` (``run_minutes``, never a delivery)."""
        return vq.sends_since(self.conn, since)

    def recent_sends(self, run_id: int, senders: Collection[str], since: datetime
                     ) -> tuple[dict[str, RecentSends], dict[str, RecentSends]]:
        """The run's sends at or after ``since`` per sender and per worker, in one read
        (``run_view.recent_sends_and_workers``)."""
        return vq.recent_sends_and_workers(self.conn, run_id, senders, since)

    def last_send(self, run_id: int, senders: Collection[str]) -> datetime | None:
        """When the run's newest send left (None before its first)."""
        return vq.last_send(self.conn, run_id, senders)

    def dispatching(self, run_id: int) -> tuple[int, datetime | None]:
        """Rows being sent or verified, and when the first verification ends
        (``run_view.verifying_until``)."""
        return vq.verifying_until(self.conn, run_id)

    def next_due(self, run_id: int) -> datetime | None:
        """The earliest ``due_at`` among the first planned rows in plan order."""
        return vq.next_due(self.conn, run_id)

    def step_kinds(self, run_id: int, steps: Sequence[int]) -> list[str]:
        """The kind of each of ``steps`` that has rows (``text``, ``poll``, ``list`` …)."""
        return vq.step_kinds(self.conn, run_id, steps)


class RunSamples:
    """A run's newest rows its page shows, each read over a bounded sample."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def errors(self, run_id: int, states: Sequence[str]) -> list[ErrorRow]:
        """Its rows in ``states`` grouped by message over the newest of each state, most
        first (``run_view.newest_errors``)."""
        return vq.newest_errors(self.conn, run_id, states)

    def sms_failures(self, run_id: int) -> list[SmsFailureRow]:
        """Its newest undelivered SMS by report and error code, most first."""
        return vq.newest_sms_failures(self.conn, run_id)

    def events(self, run_id: int) -> list[EventRow]:
        """Its newest events among the ledger's newest, newest first."""
        return vq.recent_events(self.conn, run_id)

    def replies(self, run_id: int) -> list[EventRow]:
        """Its newest replies, newest first."""
        return vq.recent_replies(self.conn, run_id)

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
        """Rows dispatched through each of ``senders`` since ``since``, every run (a
        retry waiting in ``planned`` counts; ``run_view.dispatched_since``)."""
        return vq.dispatched_since(self.conn, senders, since)

    def sent_since(self, since: datetime, senders: Collection[str]) -> dict[str, int]:
        """Sends of ``senders`` since ``since``, every run, as the daily caps count them
        (``dispatch.sent_today_by_sender``)."""
        return dq.sent_today_by_sender(self.conn, since, senders)

    def nth_send_since(self, sender: str, since: datetime, n: int) -> datetime | None:
        """When ``sender``'s ``n``-th send since ``since`` went out (None: fewer)."""
        return caps.nth_send_since(self.conn, sender, since, n)


__all__ = ["RunReads", "RunSamples", "RunSenderReads", "VerdictReads"]
