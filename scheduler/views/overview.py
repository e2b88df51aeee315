"""The dashboard's overview: the newest runs with their progress, today's sends, the
senders at a glance, read in ONE snapshot (:func:`read_overview`)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from scheduler.core.units import day_start
from scheduler.ledger import access
from scheduler.ledger.access import Connection
from scheduler.ledger.models import Run
from scheduler.ledger.overview_reads import OverviewReads
from scheduler.ledger.run_reads import RunReads, RunSenderReads
from scheduler.ledger.sender_reads import SenderReads
from scheduler.ledger.states import HELD_STATES
from scheduler.ledger.states import DeliveryState as S
from scheduler.views.channel_status import short_outcomes
from scheduler.views.reading import SENDER_DAY_COUNTED
from scheduler.views.run_models import SenderGlance
from scheduler.views.run_senders import what_to_do

if TYPE_CHECKING:
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings

__all__ = ["Overview", "RunSummary", "read_overview"]

#: Runs listed on the overview.
RUNS_SHOWN = 50


class RunSummary(BaseModel):
    """One run in the overview's list (its counts from the tallies)."""

    id: int
    campaign: str
    channel: str
    status: str
    reason: str | None = None
    target: str | None = None
    timezone: str = "UTC"
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    total: int = 0
    done: int = 0
    percent: float = 0.0
    #: A few words on how it went (``campaign runs``'s line).
    summary: str = ""


class Overview(BaseModel):
    """The overview page, as of ``read_at``."""

    #: Every run of the ledger counted by status.
    by_status: dict[str, int] = Field(default_factory=dict)
    #: The newest runs (at most ``limit``), newest first.
    runs: list[RunSummary] = Field(default_factory=list)
    limit: int = 50
    #: Sends today (every run, every sender): since ``day_start``, midnight in ``timezone``
    #: (each sender's in ``senders``, while the day has at most ``SENDER_DAY_COUNTED``).
    sends_today: int = 0
    day_start: datetime | None = None
    timezone: str = "UTC"
    senders: list[SenderGlance] = Field(default_factory=list)
    #: Live ``campaign serve`` workers (PostgreSQL).
    workers: int = 0
    read_at: datetime
    version: str = ""


def _summary(run: Run, conn: Connection) -> RunSummary:
    """One run of the list: its counts and funnel from the tallies (a few dozen rows)."""
    assert run.id is not None
    tally = RunReads(conn).tally(run.id)
    counts = tally.states()
    funnel = tally.funnel()
    tracking = tally.tracking()
    total = funnel["planned"]
    remaining = counts.get(S.PLANNED, 0) + counts.get(S.DISPATCHING, 0)
    done = max(total - remaining, 0)
    return RunSummary(
        id=run.id, campaign=run.campaign_name, channel=run.channel, status=run.status,
        reason=run.stop_reason, target=run.target, timezone=run.timezone,
        created_at=run.created_at, started_at=run.started_at, finished_at=run.finished_at,
        counts=counts, total=total, done=done,
        percent=round(100 * done / total, 1) if total else 0.0,
        summary=short_outcomes(run.channel, counts, tracking))


def _senders(conn: Connection, since: datetime, day_sends: int) -> list[SenderGlance]:
    profiles = SenderReads(conn).profiles()
    today = (RunSenderReads(conn).dispatched_since(list(profiles), since)
             if day_sends <= SENDER_DAY_COUNTED else None)
    return [SenderGlance(sender=p.sender, state=p.state, reason=p.reason, since=p.since,
                         score=p.score, throttle=p.throttle, held=p.state in HELD_STATES,
                         what_to_do=what_to_do(p.sender, p.state),
                         sends_today=today.get(p.sender, 0) if today is not None else None,
                         warm_day=p.warm_day)
            for p in profiles.values()]


def read_overview(ledger: Ledger, *, settings: Settings, now: datetime,
                  limit: int = RUNS_SHOWN) -> Overview:
    """The overview as of ``now``, read in ONE snapshot: the runs by status, the newest
    ``limit`` runs with their progress (tallies), today's sends (``run_minutes``; the day
    in the newest run's zone, UTC before any run), every sender's profile and sends today
    (the sender index alone, while the day has at most :data:`SENDER_DAY_COUNTED`)."""
    from scheduler.views.workers import read_workers

    with access.snapshot(ledger.engine, "read the overview") as conn:
        reads = RunReads(conn)
        runs = reads.newest(limit)
        zone = runs[0].timezone if runs else "UTC"
        since = day_start(now, zone)
        day_sends = reads.sends_since(since)
        overview = Overview(
            by_status=OverviewReads(conn).runs_by_status(), runs=[_summary(r, conn) for r in runs],
            limit=limit, sends_today=day_sends, day_start=since,
            timezone=zone, senders=_senders(conn, since, day_sends), read_at=now,
            workers=0 if conn.dialect.name == "sqlite" else len(
                read_workers(conn, settings.worker_lease_s, now).workers))
    shown = overview.model_dump_json(exclude={"read_at", "version"})
    overview.version = hashlib.blake2b(shown.encode(), digest_size=8).hexdigest()
    return overview
