"""Triggers: APScheduler 3 decides *when* a campaign is due; our ``fires`` table records it.

APScheduler is used only as a trigger engine (docs/guides/serve.md): its jobs live in the
ledger's database (``apscheduler_jobs``), their only argument is the campaign name, and
the job function does nothing by itself. What matters is the submission event, which
carries the exact scheduled fire time: it is recorded in ``fires``, unique on (campaign,
fire time), so two trigger processes or a restart can never create a run twice. Misfires
are coalesced into one fire; a fire older than the start grace is recorded as ``missed``.
The dispatcher, not APScheduler, paces the sends.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from apscheduler.events import (
    EVENT_JOB_MISSED,
    EVENT_JOB_SUBMITTED,
    JobExecutionEvent,
    JobSubmissionEvent,
)
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

from scheduler.core.time_words import span
from scheduler.core.timeutil import utcnow
from scheduler.core.units import load_zone
from scheduler.dispatch.store import ScheduleStore

log = logging.getLogger(__name__)

#: A fire may start this late; later, it is recorded as missed.
DEFAULT_START_GRACE_S = 3600


def campaign_due(campaign_name: str) -> None:
    """The job function: a marker; the submission event records the fire (see module doc)."""
    log.debug("campaign %s is due", campaign_name)


def make_trigger(kind: str, spec: str, timezone: str) -> Any:
    """An APScheduler trigger for ``cron`` (crontab line) or ``at`` (ISO time, local)."""
    zone = load_zone(timezone)
    if kind == "cron":
        return CronTrigger.from_crontab(spec, timezone=zone)
    moment = datetime.fromisoformat(spec)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return DateTrigger(run_date=moment, timezone=zone)


def record_fire(store: ScheduleStore, name: str, fire_time: datetime, *,
                status: str = "due", reason: str | None = None) -> bool:
    """Record that ``name`` was due at ``fire_time``; False when it was already recorded
    (or ``name`` is no longer scheduled)."""
    return store.record_fire(name, fire_time, status=status, reason=reason)


class Triggers:
    """The trigger process: APScheduler with its job store in the ledger's database."""

    def __init__(self, store: ScheduleStore, *,
                 start_grace_s: float = DEFAULT_START_GRACE_S) -> None:
        self.store = store
        self.start_grace_s = start_grace_s
        self.scheduler = BackgroundScheduler(
            jobstores={"default": store.job_store()},
            job_defaults={"coalesce": True, "misfire_grace_time": int(start_grace_s),
                          "max_instances": 1},
            timezone="UTC",
        )
        self.scheduler.add_listener(self._on_event, EVENT_JOB_SUBMITTED | EVENT_JOB_MISSED)
        self._synced: dict[str, tuple[str, str]] = {}

    def _on_event(self, event: Any) -> None:
        # APScheduler announces a submission before its executor checks the misfire
        # grace, so a too-late run time is filtered here, not left to EVENT_JOB_MISSED.
        if isinstance(event, JobSubmissionEvent):
            times = sorted(event.scheduled_run_times)
            if not times:
                return
            latest = times[-1]  # coalesced misfires: one fire, at the latest due time
            if (self.store.clock() - latest).total_seconds() > self.start_grace_s:
                self._missed(event.job_id, latest)
            else:
                record_fire(self.store, event.job_id, latest)
        elif isinstance(event, JobExecutionEvent) and event.code == EVENT_JOB_MISSED:
            self._missed(event.job_id, event.scheduled_run_time)

    def _missed(self, name: str, due: datetime) -> None:
        late = self.store.clock() - due
        record_fire(self.store, name, due, status="missed",
                    reason=f"skipped: {span(late)} late, more than the start grace of "
                           f"{span(self.start_grace_s)}: not started")

    def sync(self) -> list[str]:
        """Make APScheduler's jobs match the ``schedules`` table; returns the names."""
        schedules, fired = self.store.schedules()
        wanted = {s.name for s in schedules}
        for job in self.scheduler.get_jobs():
            if job.id not in wanted:
                job.remove()
        for name in set(self._synced) - wanted:
            del self._synced[name]
        for schedule in schedules:
            key = (schedule.trigger, schedule.timezone)
            if self._synced.get(schedule.name) == key:
                continue  # unchanged: leave APScheduler's own state alone
            self._synced[schedule.name] = key
            kind, _, spec = schedule.trigger.partition(":")
            if kind == "at" and schedule.name in fired:
                continue  # a one-off that already fired
            self.scheduler.add_job(
                campaign_due, make_trigger(kind, spec, schedule.timezone), args=[schedule.name],
                id=schedule.name, name=schedule.name, replace_existing=True,
            )
        return sorted(wanted)

    def start(self) -> None:
        """Start firing in a background thread."""
        self.scheduler.start()
        self.sync()

    def stop(self) -> None:
        """Stop firing (jobs stay in the store)."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)


def add_schedule(store: ScheduleStore, name: str, definition_path: str, trigger: str,
                 timezone: str) -> None:
    """Register (or replace) a campaign's schedule; ``serve`` picks it up."""
    store.put_schedule(name, definition_path, trigger, timezone)


def remove_schedule(store: ScheduleStore, name: str) -> bool:
    """Forget a campaign's schedule (and its APScheduler job); False when unknown."""
    return store.delete_schedule(name)


def next_fire_times(trigger: Any, count: int = 3, now: datetime | None = None) -> list[datetime]:
    """The next ``count`` fire times of a trigger."""
    times: list[datetime] = []
    previous = None
    moment = now or utcnow()
    for _ in range(count):
        nxt = trigger.get_next_fire_time(previous, moment)
        if nxt is None:
            break
        times.append(nxt)
        previous, moment = nxt, nxt + timedelta(microseconds=1)
    return times
