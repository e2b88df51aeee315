"""A plan stored on SQLite while another connection is writing waits its turn: it takes
the write lock before its first read, so a writer's commit meanwhile cannot fail it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from scheduler.ledger.states import DeliveryState
from tests.factories import T0, open_test_ledger, plan_rows


def test_a_plan_waits_for_a_writer_that_commits_while_it_waits(tmp_path: Path) -> None:
    """The receiver holds the write lock with a write pending when a plan starts and
    commits while the plan waits. A deferred BEGIN read first and then failed at once
    with "database is locked" (SQLITE_BUSY_SNAPSHOT, no busy wait); the plan must instead
    wait for the lock and store every row, and the receiver's write must stay."""
    path = tmp_path / "ledger.db"
    with open_test_ledger(f"sqlite:///{path}") as ledger:
        run_id = ledger.create_run(campaign_name="lock", channel="whatsapp",
                                   definition_path="c.toml", definition={"name": "lock"},
                                   delivery_mode="at-most-once", timezone="UTC")
        other = sqlite3.connect(path, isolation_level=None, timeout=10)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("INSERT INTO suppressions (number, source, reason, created_at) "
                          "VALUES ('5511988887777', 'reply', 'STOP', '2026-11-27 10:00:00')")
            failure: list[BaseException] = []

            def store() -> None:
                try:
                    ledger.store_plan(run_id, [plan_rows(40)], start_at=T0)
                except BaseException as exc:  # handed to the test's thread
                    failure.append(exc)

            planner = threading.Thread(target=store)
            planner.start()
            time.sleep(0.3)  # the plan is now waiting for the write lock
            other.execute("COMMIT")
            planner.join(timeout=30)
        finally:
            other.close()
        assert not planner.is_alive()
        assert failure == []
        assert ledger.counts(run_id) == {DeliveryState.PLANNED: 40}
        with sqlite3.connect(path) as check:
            assert check.execute("SELECT count(*) FROM suppressions").fetchone() == (1,)
