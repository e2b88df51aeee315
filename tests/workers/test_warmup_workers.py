"""Two ``campaign serve`` workers on PostgreSQL share a warming number: its warm-up cap is
counted across them. s1 (new, on the default ramp: 20 on day 1) is sent through by one
worker, which is then stopped; the other takes s1 over the same local day and sends
through it only what is left of the 20. s2 (warm-up off) finishes the rows; nobody is sent
anything twice (the sandbox's record)."""

from __future__ import annotations

import os
import signal
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from scheduler.ledger import access
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import SenderStatus
from scheduler.sandbox.testing import text_project_phone, write_text_project
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    deliveries,
    leases,
    live_worker_ids,
    plan,
    send_times,
    sends_by_recipient,
    wait_until,
    worker_env,
)

ROWS = 80
#: The default ramp's cap on day 1.
DAY_ONE_CAP = 20
CONFIG = '[senders]\nwarmup = "default"\n[senders.warmup_of]\ns2 = "off"\n'


def _zone_at_midday(now: datetime) -> str:
    """A fixed-offset zone where ``now`` is about noon, so that the local day cannot end
    during the test (``Etc/GMT-3`` is UTC+3)."""
    offset = 12 - now.hour
    return "Etc/GMT" if offset == 0 else f"Etc/GMT{-offset:+d}"


def _sent_through(box_sends: dict[str, list[datetime]], sender: str) -> int:
    return len(box_sends.get(sender, []))


def test_two_workers_count_a_warming_number_s_cap_together(
        tmp_path: Path, pg_url: str, make_sandbox, workers: WorkerPool) -> None:
    sandbox = make_sandbox()
    connect_sessions(sandbox, ("s1", "s2"))
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    campaign = write_text_project(tmp_path, ROWS, rate="4/s", senders=("s1", "s2"),
                                  name="lote", text="Oi {{ nome }}")
    zone = _zone_at_midday(datetime.now(UTC))
    campaign.write_text(campaign.read_text().replace('timezone = "UTC"',
                                                     f'timezone = "{zone}"'))
    ledger = Ledger(open_ledger(pg_url))
    env = worker_env(sandbox, pg_url)
    for _ in range(2):
        workers.start(tmp_path, env)
    wait_until(lambda: len(live_worker_ids(ledger)) == 2, 60, "2 live workers", workers)
    run_id = plan(ledger, campaign, sandbox)

    # the worker holding s1 sends part of its 20, then stops (SIGTERM: it gives s1 up)
    wait_until(lambda: _sent_through(send_times(sandbox), "s1") >= 6, 60,
               "6 sends through s1", workers)
    first = str(leases(ledger)["s1"].worker)
    before = _sent_through(send_times(sandbox), "s1")
    assert before < DAY_ONE_CAP, "the first worker used the whole cap: nothing to share"
    os.kill(int(first.split(":")[1]), signal.SIGTERM)

    wait_until(lambda: ledger.get_run(run_id).status == "completed", 60,
               "the run to complete", workers)
    rows = deliveries(ledger, run_id)
    through_s1 = [d for d in rows if d.sender == "s1" and d.dispatched_at is not None]
    by_worker = Counter(d.worker for d in through_s1)
    # both workers sent through s1 (the first before it stopped), on one local day of the
    # campaign's zone, and together no more than the day's cap
    assert first in by_worker and len(by_worker) == 2, by_worker
    per_day = Counter(_local_date(d.dispatched_at, zone) for d in through_s1)
    assert list(per_day.values()) == [DAY_ONE_CAP], (per_day, by_worker, workers.output())
    # the sandbox's record agrees: s1 sent its cap and no more; every row went out once
    box = send_times(sandbox)
    assert _sent_through(box, "s1") == DAY_ONE_CAP
    sent = sends_by_recipient(sandbox)
    assert sent == Counter({"55" + text_project_phone(i): 1 for i in range(ROWS)})
    with access.read(ledger.engine) as conn:  # one profile, shared: still day 1 of its ramp
        s1 = spq.profiles(conn, ["s1"])["s1"]
    assert (s1.state, s1.warm_day) == (SenderStatus.WARMING, 1)
    ledger.close()


def _local_date(at: datetime | None, zone: str) -> object:
    assert at is not None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(ZoneInfo(zone)).date()
