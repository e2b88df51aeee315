"""``campaign serve``'s log: APScheduler's misfire in plain words, each line with its zone."""

from __future__ import annotations

import io
import logging
import re
from datetime import UTC, datetime, timedelta

from apscheduler.executors.base import run_job
from apscheduler.job import Job
from apscheduler.schedulers.background import BackgroundScheduler

from scheduler.dispatch.triggers import campaign_due, make_trigger
from scheduler.usecases.serve_log import misfire_message, serve_logging

ZONE = "America/Sao_Paulo"


def test_a_misfire_is_said_in_plain_words() -> None:
    fire = datetime(2019, 11, 23, 12, 0, 30, tzinfo=UTC)
    late = timedelta(days=2517, hours=13, minutes=50, seconds=43.252787)
    assert misfire_message("boas-vindas", fire, late, 3600, ZONE) == (
        "campaign boas-vindas: skipped the fire time 2019-11-23 09:00 -03:00 "
        "(2,517 days 13 h ago, more than the grace time of 60 min): not started")


def test_apschedulers_own_misfire_warning_is_translated() -> None:
    """APScheduler's real executor function logs the misfire; serve's handler rewrites it."""
    job = Job(BackgroundScheduler(timezone="UTC"), id="boas-vindas", func=campaign_due,
              trigger=make_trigger("at", "2019-11-23T09:00:30", ZONE), executor="default",
              args=["boas-vindas"], kwargs={}, name="boas-vindas", misfire_grace_time=3600,
              coalesce=True, max_instances=1, next_run_time=None)
    out = io.StringIO()
    with serve_logging(out, zone=ZONE):
        run_job(job, "default", [datetime(2019, 11, 23, 12, 0, 30, tzinfo=UTC)],
                "apscheduler.executors.default")
    line = out.getvalue()
    assert "missed by" not in line and "days," not in line
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d -03:00 warning: campaign boas-vindas: skipped the "
        r"fire time 2019-11-23 09:00 -03:00 \([\d,]+ days \d+ h ago, more than the grace "
        r"time of 60 min\): not started\n", line), line


def test_other_records_keep_their_words_with_time_zone_and_escapes() -> None:
    out = io.StringIO()
    logger = logging.getLogger("scheduler.tracking")
    with serve_logging(out, zone="UTC"):
        logger.warning("event from %s refused", "loja\x1b[2J")
        logger.info("not shown: below the warning level")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC warning: event from "
                        r"loja\\x1b\[2J refused\n", out.getvalue()), out.getvalue()
    with_handler = len(logger.handlers)
    logger.warning("after the block: not through serve's handler")
    assert with_handler == 0 and out.getvalue().count("\n") == 1
