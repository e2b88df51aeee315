"""A `campaign run` killed while planning must not leave an empty run to "continue"."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import update

from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries.tables import runs as runs_table
from scheduler.ledger.runs import Ledger
from scheduler.usecases.planning import plan_run, unfinished_run_for
from tests.factories import write_project

DEAD_PID = 2**22 + 4321


def test_a_run_whose_planner_died_is_discarded_and_planned_again(tmp_path: Path,
                                                                  ledger_url: str) -> None:
    path = write_project(tmp_path, 5, name="lote")
    ledger = Ledger(open_ledger(ledger_url))
    # the planner created the run, then was killed before the plan's transaction committed
    ledger.create_run(campaign_name="lote", channel="whatsapp",
                      definition_path=str(path), definition={}, delivery_mode="x",
                      timezone="UTC")
    with ledger.engine.begin() as conn:
        conn.execute(update(runs_table).values(owner_pid=DEAD_PID))

    assert unfinished_run_for(ledger, "lote") is None  # nothing to "continue"
    assert [r.id for r in ledger.list_runs()] == []  # the empty run is gone
    again = plan_run(ledger, path, start_at=datetime.now(UTC))
    assert ledger.counts(again) == {"planned": 5}
    assert unfinished_run_for(ledger, "lote").id == again
    assert ledger.get_run(again).owner_pid is None  # released once stored


def test_a_plan_still_being_written_is_left_alone(ledger_url: str) -> None:
    ledger = Ledger(open_ledger(ledger_url))
    run_id = ledger.create_run(campaign_name="lote", channel="whatsapp", definition_path="x",
                               definition={}, delivery_mode="x", timezone="UTC")
    assert ledger.discard_interrupted_plans() == []  # this process is alive and planning
    assert ledger.get_run(run_id).status == "planned"
