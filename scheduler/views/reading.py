"""Read a run's view on one connection (the caller's snapshot): :func:`read_run`.

Every read is bounded (the ledger's doors :mod:`scheduler.ledger.run_reads` say how): the
counts, the funnel and the steps come from the per-run tallies (kept by triggers), the
rest from indexed reads of the last minutes or of the newest rows. ``campaign status``
adds a few whole-run reads of its own on the same connection (:mod:`scheduler.views.status`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.core.channel_terms import terms_of
from scheduler.core.units import day_start
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.results import CapWait
from scheduler.dispatch.unknowns import UnknownVerdicts
from scheduler.ledger.access import Connection
from scheduler.ledger.lease import owner_alive
from scheduler.ledger.models import Run
from scheduler.ledger.run_reads import RunReads, RunSamples, VerdictReads
from scheduler.ledger.states import DeliveryState as S
from scheduler.ledger.states import RunStatus, describe_target
from scheduler.settings.run import RunOptions, from_snapshot
from scheduler.views import run_parts as vf
from scheduler.views.attempts import read_attempts, second_chance_waits
from scheduler.views.run_models import RunInfo, RunView, SenderGlance, Wait
from scheduler.views.run_senders import RunSender, read_senders_of_run
from scheduler.views.run_waits import read_cap_waits
from scheduler.views.unserved import (
    Unserved,
    held_by_a_process,
    judge_serving,
    read_serving_workers,
)
from scheduler.views.verdict_memo import kept_skips, kept_verdicts
from scheduler.views.waits import RunFacts, judge_stuck, run_waits

if TYPE_CHECKING:
    from scheduler.ledger.attempt_funnel import AttemptsView
    from scheduler.ledger.run_rows import Marks, RecentSends, Tally
    from scheduler.settings.load import Settings

#: The window of "recent" sends: pace per sender and per worker, the ETA.
PACE_WINDOW = timedelta(minutes=5)
#: Error states grouped on a run's page.
ERROR_STATES = (S.FAILED, S.UNKNOWN, S.EXPIRED, S.UNDELIVERED)
#: A run's view judges its ``unknown`` rows when it has at most this many (each is read:
#: about 20 ms per 1,000 on SQLite)...
UNKNOWN_JUDGED = 2_000
#: ...and counts the reasons of at most this many skipped rows (the newest).
SKIPS_COUNTED = 5_000
#: Each sender's sends today are counted (an index-only count of as many entries, about
#: 40 ms per 100,000) while the day has at most this many sends (``run_minutes``).
SENDER_DAY_COUNTED = 100_000


@dataclass
class RunRead:
    """A run's view and what ``campaign status`` says besides, from one snapshot."""

    view: RunView
    run: Run
    options: RunOptions
    senders: list[RunSender]
    capped: list[CapWait]
    verdicts: UnknownVerdicts
    unserved: Unserved | None
    #: ``RunReads.tracking``'s counts (sent, delivered, read, replied, opted_out).
    tracking: dict[str, int]


def options_of(run: Run) -> RunOptions:
    """The run's options as planned (``Ledger.options``, without a ledger)."""
    if run.options is not None:
        return RunOptions.from_json(run.options, run_id=run.id)
    return from_snapshot(json.loads(run.definition or "{}"))


def run_info(run: Run, options: RunOptions, now: datetime) -> RunInfo:
    """The run's own row as the view shows it."""
    owner = (f"pid {run.owner_pid} on {run.owner_host}"
             if run.status == RunStatus.RUNNING and owner_alive(run, now) else None)
    return RunInfo(id=run.id or 0, campaign=run.campaign_name, channel=run.channel,
                   status=run.status, reason=run.stop_reason, delivery=run.delivery_mode,
                   target=run.target, sent_to=describe_target(run.target),
                   timezone=options.timezone, created_at=run.created_at,
                   started_at=run.started_at, finished_at=run.finished_at,
                   control=run.control, owner=owner)


def glance(sender: RunSender) -> SenderGlance:
    """A run's sender as the page shows it."""
    return SenderGlance(sender=sender.sender, state=sender.state, reason=sender.reason,
                        since=sender.since, score=sender.score, throttle=sender.throttle,
                        held=sender.held, what_to_do=sender.what_to_do,
                        sends_today=sender.sends_today, warm_day=sender.warm_day,
                        warm_cap=sender.warm_cap)


def version_of(view: RunView) -> str:
    """A short token of what the view shows: the same view gives the same token; the
    time it was read and the words that only count down ("in 3 min") are left out."""
    shown = view.model_dump(mode="json", exclude={
        "read_at": True, "version": True, "stuck": {"idle_s"},
        "waits": {"__all__": {"text"}}})
    return hashlib.blake2b(json.dumps(shown, sort_keys=True).encode(),
                           digest_size=8).hexdigest()


def _unserved(conn: Connection, run: Run, settings: Settings,
              now: datetime) -> Unserved | None:
    if run.status not in (RunStatus.PLANNED, RunStatus.RUNNING):
        return None
    workers = read_serving_workers(conn, settings.worker_lease_s, now)
    return judge_serving(run, held=held_by_a_process(run, now), workers=workers)


def read_run(conn: Connection, run: Run, settings: Settings, now: datetime, *,
             sender_counts: bool = False, sends_today: bool = False,
             every_row: bool = False) -> RunRead:
    """Everything a run's page shows, read on ``conn``. ``campaign status`` asks for more:
    ``sender_counts``, this run's rows per sender (read from the trigger-kept per-sender
    tallies, no scan); ``sends_today``, each sender's sends today (as many index entries
    as the day's sends, so only while the day has at most :data:`SENDER_DAY_COUNTED`);
    ``every_row``, every unknown row judged and every skipped row's reason (as many rows
    as there are)."""
    assert run.id is not None
    reads = RunReads(conn)
    options = options_of(run)
    # the run's tallies read once: its counts, funnel and tracking are sums of them (as
    # dq.counts_by_state and tq.funnel sum them)
    tally = reads.tally(run.id)
    tracking = reads.tracking(run.id, tally).as_dict()
    if sends_today:  # a day of a million sends takes 0.3 s to count per sender: not then
        day = reads.sends_since(day_start(now, options.timezone))
        sends_today = day <= SENDER_DAY_COUNTED
    senders = read_senders_of_run(conn, run.id, options, settings.senders, now,
                                  with_counts=sender_counts, today=sends_today)
    names = [s.sender for s in senders]
    recent = _Recent(names, *reads.recent_sends(run.id, names, now - PACE_WINDOW),
                     last_send=reads.last_send(run.id, names))
    counts = tally.states()
    dispatch = DispatchOptions.for_run(options, start=run.started_at or now)
    capped = (read_cap_waits(conn, dispatch, now)
              if run.status == RunStatus.RUNNING and counts.get(S.PLANNED) else [])
    judged = _judge(conn, run.id, counts, settings, now, every_row=every_row)
    unserved = _unserved(conn, run, settings, now)
    facts = _facts(reads, run, options, counts, dispatch, capped, senders, recent,
                   judged.verdicts, unserved, now)
    attempts = read_attempts(conn, run, options, every_row=every_row)
    facts.extra = second_chance_waits(run, attempts, facts.planned)
    view = _view(conn, run, options, settings, now, (tally, counts, tracking), recent, facts,
                 judged, attempts)
    view.version = version_of(view)
    return RunRead(view=view, run=run, options=options, senders=senders, capped=capped,
                   verdicts=judged.verdicts, unserved=unserved, tracking=tracking)


@dataclass(frozen=True)
class _Recent:
    """The run's recent sends (within :data:`PACE_WINDOW`) per sender and per worker, and
    its newest send."""

    names: list[str]
    by_sender: dict[str, RecentSends]
    by_worker: dict[str, RecentSends]
    last_send: datetime | None


@dataclass(frozen=True)
class _Judged:
    """How far the view judges the run's unknown rows and counts its skipped rows' reasons."""

    judged: bool  # every unknown row judged (else none)
    sampled: int  # the newest skipped rows counted (0: every one, from the kept reasons)
    marks: Marks | None  # what the kept verdicts and skip reasons depend on
    verdicts: UnknownVerdicts


def _judge(conn: Connection, run_id: int, counts: dict[str, int], settings: Settings,
           now: datetime, *, every_row: bool) -> _Judged:
    """The verdicts on the run's unknown rows, when few enough (or ``every_row``)."""
    unknown = counts.get(S.UNKNOWN, 0)
    judged = every_row or unknown <= UNKNOWN_JUDGED
    # kept between reads while nothing they come from changed (views/verdict_memo.py)
    skipped = counts.get(S.SKIPPED, 0)
    sampled = 0 if every_row or skipped <= SKIPS_COUNTED else SKIPS_COUNTED
    # what the kept verdicts and skip reasons depend on, in one round trip
    marks = (VerdictReads(conn).marks(run_id)
             if (unknown and judged) or (skipped and not sampled) else None)
    verdicts = (kept_verdicts(conn, run_id, now, settings.retry_horizon(), marks=marks)
                if unknown and judged else UnknownVerdicts())
    return _Judged(judged, sampled, marks, verdicts)


def _sending(run: Run, counts: dict[str, int]) -> bool:
    """Whether the run is running with rows still to send."""
    return run.status == RunStatus.RUNNING and bool(counts.get(S.PLANNED))


def _facts(reads: RunReads, run: Run, options: RunOptions, counts: dict[str, int],
           dispatch: DispatchOptions, capped: list[CapWait], senders: list[RunSender],
           recent: _Recent, verdicts: UnknownVerdicts, unserved: Unserved | None,
           now: datetime) -> RunFacts:
    """What the run's waits and stuck flag are decided from."""
    assert run.id is not None
    dispatching, verifying = (reads.dispatching(run.id)
                              if counts.get(S.DISPATCHING) else (0, None))
    return RunFacts(
        run_id=run.id, status=run.status, timezone=options.timezone,
        planned=counts.get(S.PLANNED, 0), dispatching=dispatching, control=run.control,
        started_at=run.started_at,
        window=None if dispatch.recipient_timezone else dispatch.window,
        capped=capped,
        senders=[glance(s) for s in senders], verifying_until=verifying,
        unknown_waiting=len(verdicts.waiting), unknown_settles_at=verdicts.settles_at,
        next_due=reads.next_due(run.id) if _sending(run, counts) else None,
        unserved=(unserved.reason, unserved.advice) if unserved else None,
        planned_rate=vf.planned_rate(options.rate_per_s, senders),
        last_send_at=recent.last_send, latest=dispatch.latest)


def _view(conn: Connection, run: Run, options: RunOptions, settings: Settings,
          now: datetime, tallied: tuple[Tally, dict[str, int], dict[str, int]],
          recent: _Recent, facts: RunFacts, judged: _Judged,
          attempts: AttemptsView | None) -> RunView:
    """The run's page from what was read (``tallied``: the run's tally, its counts by state
    and tracking), with the samples of its errors and events."""
    assert run.id is not None
    tally, counts, tracking = tallied
    run_id, samples, funnel_counts = run.id, RunSamples(conn), tally.funnel()
    waits: list[Wait] = run_waits(facts, now)
    claimed = tally.workers()  # PostgreSQL workers' rows (none on SQLite)
    skipped, unknown = counts.get(S.SKIPPED, 0), counts.get(S.UNKNOWN, 0)
    sampled, verdicts = judged.sampled, judged.verdicts
    return RunView(
        run=run_info(run, options, now), counts=counts,
        funnel=vf.funnel_view(run.channel, tally, funnel_counts, tracking,
                              samples.sms_failures(run_id)
                              if terms_of(run.channel).error_codes and counts.get(S.UNDELIVERED)
                              else []),
        progress=vf.progress(funnel_counts, counts, recent.by_sender, PACE_WINDOW, now,
                             sending=_sending(run, counts)),
        pace=vf.pace(recent.names, recent.by_sender, PACE_WINDOW), waits=waits,
        errors=vf.errors(samples.errors(run_id, [str(s) for s in ERROR_STATES
                                                 if counts.get(s)])),
        events=vf.events(samples.events(run_id), samples.replies(run_id)),
        workers=vf.workers(claimed, recent.by_worker if claimed else {},
                           _live_workers(conn, settings, now), PACE_WINDOW),
        stuck=judge_stuck(facts, waits, now), last_send_at=recent.last_send,
        senders=facts.senders, read_at=now,
        skipped_by_reason=(samples.skip_kinds(run_id, sampled) if sampled else
                           kept_skips(conn, run_id, marks=judged.marks) if skipped else {}),
        skipped_sampled=sampled, unknown_judged=judged.judged,
        unknown_detail=({"waiting": len(verdicts.waiting), "unproven": len(verdicts.unproven),
                         "unknowable": len(verdicts.unknowable)}
                        if unknown and judged.judged else {}),
        attempts=attempts)


def _live_workers(conn: Connection, settings: Settings, now: datetime) -> set[str]:
    if conn.dialect.name == "sqlite":  # workers serve PostgreSQL ledgers only
        return set()
    from scheduler.views.workers import read_workers  # (SQLite: not even imported)

    return {w.id for w in read_workers(conn, settings.worker_lease_s, now).workers}


__all__ = ["RunRead", "glance", "options_of", "read_run", "run_info", "version_of"]
