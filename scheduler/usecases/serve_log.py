"""``campaign serve``'s log: APScheduler's messages in plain words, each line with its time
and zone.

APScheduler 3 logs through the standard ``logging`` module (loggers ``apscheduler.scheduler``
and ``apscheduler.executors.<alias>``); with nothing configured, Python prints its warnings
raw on stderr: ``Run time of job "welcome (trigger: date[…], next run at: …)" was missed by
2517 days, 13:50:43.252787``. :func:`serve_logging` routes those loggers (and the project's
own ``scheduler.*`` warnings) through one handler whose filter rewrites APScheduler's
messages it knows (:func:`misfire_message`) and whose lines start with the time and its zone
(``2026-11-23 09:02:15 -03:00 warning: …``). The misfire's fire time is said in the
campaign's zone (its trigger's).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TextIO

from scheduler.core.display import clean
from scheduler.core.time_words import local_time, span
from scheduler.core.timeutil import local_zone

#: APScheduler 3's messages, as its code logs them (``executors/base.py``,
#: ``schedulers/base.py``).
MISSED = 'Run time of job "%s" was missed by %s'
MAX_INSTANCES = ('Execution of job "%s" skipped: maximum number of running instances '
                 "reached (%d)")
#: The loggers ``campaign serve`` shows (warnings and errors).
LOGGERS = ("apscheduler", "scheduler")


def misfire_message(name: str, fire_time: datetime, late: timedelta, grace_s: float | None,
                    zone: str | tzinfo) -> str:
    """A missed fire in plain words: which campaign, which fire time (in its zone), how
    late, and that it was not started."""
    grace = f"the grace time of {span(grace_s)}" if grace_s is not None else "its grace time"
    return (f"campaign {clean(name)}: skipped the fire time {local_time(fire_time, zone)} "
            f"({span(late)} ago, more than {grace}): not started")


def _job_facts(job: Any) -> tuple[str, tzinfo | str, float | None]:
    """A job's campaign name, its trigger's zone and its misfire grace (seconds)."""
    name = str(getattr(job, "name", None) or getattr(job, "id", None) or job)
    trigger = getattr(job, "trigger", None)
    run_date = getattr(trigger, "run_date", None)  # a DateTrigger keeps its zone there
    zone = getattr(trigger, "timezone", None) or getattr(run_date, "tzinfo", None) or UTC
    grace = getattr(job, "misfire_grace_time", None)
    return name, zone, grace


class PlainWords(logging.Filter):
    """Rewrites APScheduler's messages it knows into plain words (others pass as they are)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record`` in place when it is one of APScheduler's known messages."""
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg == MISSED and len(args) == 2 and isinstance(args[1], timedelta):
            name, zone, grace = _job_facts(args[0])
            late = args[1]
            fire_time = datetime.fromtimestamp(record.created, UTC) - late
            record.msg, record.args = misfire_message(name, fire_time, late, grace, zone), ()
        elif record.msg == MAX_INSTANCES and len(args) == 2:
            name, _zone, _grace = _job_facts(args[0])
            record.msg = (f"campaign {clean(name)}: a fire came while the previous one was "
                          "still being recorded: skipped (they are coalesced into one)")
            record.args = ()
        return True


class ZonedFormatter(logging.Formatter):
    """``2026-11-23 09:02:15 -03:00 warning: message``: the time in ``zone`` with its
    label, the level in words."""

    def __init__(self, zone: str | tzinfo) -> None:
        super().__init__()
        self.zone = zone

    def format(self, record: logging.LogRecord) -> str:
        """One line (a traceback, if any, follows on its own lines)."""
        at = local_time(datetime.fromtimestamp(record.created, UTC), self.zone, seconds=True)
        line = f"{at} {record.levelname.lower()}: {clean(record.getMessage())}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


@contextlib.contextmanager
def serve_logging(stream: TextIO | None = None, *, zone: str | tzinfo | None = None,
                  level: int = logging.WARNING) -> Iterator[logging.Handler]:
    """Route APScheduler's and the project's log records of ``level`` and above through one
    handler (plain words, time with zone) while the block runs; the loggers are left as
    they were afterwards."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(PlainWords())
    handler.setFormatter(ZonedFormatter(zone if zone is not None else local_zone()))
    handler.setLevel(level)
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.addHandler(handler)
        if logger.level == logging.NOTSET or logger.level > level:
            logger.setLevel(level)
    try:
        yield handler
    finally:
        for logger, old_level in saved:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
