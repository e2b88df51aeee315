"""An ``Idempotency-Key`` is bound to its run as soon as the run exists, before its rows are
planned: a client's retry during a long plan answers that run, however long the plan takes,
and a key claimed again (its first planner silent past ``CLAIM_EXPIRES``) binds one run
only, the other planner's run failing before a row of it is planned."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from scheduler.ledger import idempotency
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.usecases.planning import plan_run
from tests.factories import T0, make_run, write_project

LONG_AFTER = T0 + idempotency.CLAIM_EXPIRES + timedelta(hours=2)


def test_a_retry_during_a_long_plan_answers_the_run_being_planned(
        ledger: Ledger, tmp_path: Path) -> None:
    write_project(tmp_path, 3)
    assert idempotency.claim(ledger.engine, "k", "h", T0).run_id is None
    seen: list[tuple[int, int | None, dict[str, int]]] = []

    def bind(run_id: int) -> None:  # what the API's start does, then the retry comes
        idempotency.settle(ledger.engine, "k", run_id)
        retry = idempotency.claim(ledger.engine, "k", "h", LONG_AFTER)
        seen.append((run_id, retry.run_id, dict(ledger.counts(run_id))))

    run_id = plan_run(ledger, tmp_path / "campaigns" / "lote.toml", start_at=T0,
                      on_created=bind)
    assert seen == [(run_id, run_id, {})]  # bound before a row was planned
    assert ledger.counts(run_id) == {"planned": 3}
    assert [r.id for r in ledger.list_runs()] == [run_id]


def test_a_key_claimed_again_binds_one_run_and_fails_the_others_plan(
        ledger: Ledger, tmp_path: Path) -> None:
    write_project(tmp_path, 3)
    assert idempotency.claim(ledger.engine, "k", "h", T0).run_id is None
    # the first planner goes silent; past CLAIM_EXPIRES a retry claims the key again
    assert idempotency.claim(ledger.engine, "k", "h", LONG_AFTER).run_id is None
    second = make_run(ledger, 2)
    idempotency.settle(ledger.engine, "k", second)
    # the first planner wakes up and creates its run: it may not bind, and plans nothing

    def bind(run_id: int) -> None:
        idempotency.settle(ledger.engine, "k", run_id)

    with pytest.raises(idempotency.KeyInUse, match="claimed again by another request"):
        plan_run(ledger, tmp_path / "campaigns" / "lote.toml", start_at=T0,
                 on_created=bind)
    first = next(r for r in ledger.list_runs() if r.id != second)
    assert first.status == RunStatus.FAILED and ledger.counts(first.id) == {}
    assert idempotency.claim(ledger.engine, "k", "h", LONG_AFTER).run_id == second
    # releasing for the failed run keeps the key bound to the run it started
    idempotency.release(ledger.engine, "k", run_id=first.id)
    assert idempotency.claim(ledger.engine, "k", "h", LONG_AFTER).run_id == second


def test_a_failed_plan_gives_its_bound_key_back(ledger: Ledger) -> None:
    assert idempotency.claim(ledger.engine, "k", "h", T0).run_id is None
    failed = make_run(ledger, 1)
    idempotency.settle(ledger.engine, "k", failed)
    idempotency.release(ledger.engine, "k", run_id=failed)
    assert idempotency.claim(ledger.engine, "k", "h", T0).run_id is None  # claimed anew
