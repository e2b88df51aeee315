"""``campaign status`` and ``campaign runs`` from the run's view: the JSON rows they print
(the keys they always had, and the view's own under ``view``), read in ONE snapshot.

The view's reads are bounded (:mod:`scheduler.views.reading`). ``status`` adds what only
it shows, each a scan it states: SMS segments and cost and call totals (the channel's
outcomes: the run's sent rows) and the answers of poll and list steps (those steps'
rows, only when the run has one); and this run's rows per sender, read from the
trigger-kept ``run_sender_tallies`` (no scan; issue 32).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from scheduler.core.time_words import iso_utc
from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.run_reads import RunReads
from scheduler.ledger.states import DeliveryState, RunStatus
from scheduler.reports.figures import funnel_of
from scheduler.tracking.answers import read_answer_tallies
from scheduler.views.channel_status import read_channel_outcomes, short_outcomes
from scheduler.views.reading import RunRead, read_run
from scheduler.views.run_senders import sender_lines
from scheduler.views.run_waits import read_run_waits

if TYPE_CHECKING:
    from scheduler.ledger.core import LedgerCore
    from scheduler.settings.load import Settings

#: Step kinds whose answers ``status`` tallies.
ANSWERED_KINDS = frozenset({"poll", "list"})


def _row(conn: Connection, read: RunRead, settings: Settings, now: datetime, *,
         full: bool) -> dict[str, Any]:
    """One run's JSON row; ``full``: with what only ``status`` shows."""
    view, run = read.view, read.run
    counts = view.counts
    row: dict[str, Any] = {
        "run": view.run.id, "campaign": view.run.campaign, "channel": view.run.channel,
        "status": view.run.status, "delivery": view.run.delivery,
        # times in UTC (ISO 8601); the text shows them in the campaign's zone
        "timezone": view.run.timezone,
        "created_at": iso_utc(view.run.created_at),
        "started_at": iso_utc(view.run.started_at),
        "finished_at": iso_utc(view.run.finished_at),
        "reason": view.run.reason, "deliveries": sum(counts.values()), "counts": counts,
        "target": view.run.target, "sent_to": view.run.sent_to,
    }
    if view.skipped_by_reason:  # why, by kind (blank_value, duplicate, invalid_number, …)
        row["skipped_by_reason"] = view.skipped_by_reason
    if counts.get(DeliveryState.UNKNOWN):
        row["unknown_detail"] = view.unknown_detail
        row["unknown_verdicts"] = read.verdicts.describe(view.run.id, view.run.timezone)
    row["tracking"] = read.tracking
    # second chances: the funnel per attempt and channel (None: no retry rules, fallback)
    row["attempts"] = view.attempts.model_dump(mode="json") if view.attempts else None
    outcomes = read_channel_outcomes(conn, view.run.id, run.channel, counts) if full else None
    if outcomes is not None:  # SMS and voice: their own outcomes (status, runs --json)
        row["outcomes"] = outcomes.model_dump()
        row["outcome_lines"] = outcomes.lines()
    row["summary"] = short_outcomes(run.channel, counts, read.tracking)
    kinds = RunReads(conn).step_kinds(view.run.id,
                                      sorted(s.step for s in view.funnel.steps) or [0])
    row["answers"] = ([t.as_dict() | {"line": t.line()}  # poll votes, list choices per step
                       for t in read_answer_tallies(conn, view.run.id)]
                      if full and ANSWERED_KINDS & set(kinds) else [])
    if full and read.options.conversation is not None:  # steps that follow replies
        from scheduler.views.decisions import decisions_view

        row["decisions"] = decisions_view(conn, view.run.id, read.options.conversation)
    # planned / sent / rates as the report's Summary gives them (scheduler.ledger.funnel)
    funnel = {k: n for k, n in view.funnel.counts.items() if k not in ("opted_out",
                                                                      "not_answered")}
    row["funnel"] = funnel_of(run.channel, funnel,
                              digits=getattr(outcomes, "pressed_digits", 0))
    row["workers"] = [{"worker": w.worker, "sent": w.sent, "per_s": w.per_s}
                      for w in view.workers]
    # a running run's window, and its senders at their daily cap or plan limit
    row["waits"] = read_run_waits(conn, run, read.options, counts, now)
    row["view"] = view.model_dump(mode="json")
    return row


def status_row(ledger: LedgerCore, run_id: int | None, settings: Settings, now: datetime, *,
               width: int, sender_counts: bool = True) -> tuple[dict[str, Any], list[str]]:
    """``campaign status``'s row of run ``run_id`` (the newest run when None) and its
    senders' lines, in one snapshot; ``sender_counts``: this run's rows per sender in the
    senders' entries (``--json``; from the kept per-sender tallies, no scan)."""
    from scheduler.core.errors import SchedulerError
    from scheduler.ledger.exceptions import RunNotFound

    with access.snapshot(ledger.engine, "read the status of a run") as conn:
        reads = RunReads(conn)
        found = reads.newest(1) if run_id is None else [
            r for r in [reads.run(run_id)] if r is not None]
        if not found:
            if run_id is not None:
                raise RunNotFound(run_id)
            raise SchedulerError("no runs yet: start one with `campaign run FILE`")
        read = read_run(conn, found[0], settings, now, sender_counts=sender_counts,
                        sends_today=True, every_row=True)
        row = _row(conn, read, settings, now, full=True)
    row["unserved"] = read.unserved.model_dump() if read.unserved else None
    row["senders"] = [s.model_dump() for s in read.senders]
    waiting = (read.run.status == RunStatus.RUNNING
               and bool(read.view.counts.get(DeliveryState.PLANNED)))
    return row, sender_lines(read.senders, read.options.timezone, width=width,
                             waiting=waiting)


def runs_rows(ledger: LedgerCore, settings: Settings, now: datetime,
              runs: Sequence[Run] | None = None) -> list[dict[str, Any]]:
    """``campaign runs``'s rows, newest first (every run when ``runs`` is None), in one
    snapshot; each with its ``unserved`` verdict."""
    with access.snapshot(ledger.engine, "read the runs") as conn:
        found = list(runs) if runs is not None else RunReads(conn).newest(1_000_000)
        out = []
        for run in found:
            read = read_run(conn, run, settings, now, every_row=True)
            row = _row(conn, read, settings, now, full=True)
            row["unserved"] = read.unserved.model_dump() if read.unserved else None
            out.append(row)
    return out
