"""Two campaigns that name the same session, served at once by one ``campaign serve``:
the session keeps its rate between them (sandbox timestamps), and both complete."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.sandbox.testing import write_text_project
from tests.workers.support import (
    WorkerPool,
    connect_sessions,
    deliveries,
    plan,
    send_times,
    wait_until,
    worker_env,
)

RATE = 2.0


@pytest.mark.slow
def test_two_runs_on_one_session_keep_its_rate_between_them(
        make_sandbox, tmp_path: Path, ledger_url: str, workers: WorkerPool) -> None:
    box = make_sandbox()
    connect_sessions(box, ("s1",))
    root = tmp_path / "shop"
    first = write_text_project(root, 10, rate="2/s", senders=("s1",), name="promo",
                               text="Oi {{ nome }}")
    second = write_text_project(root, 10, rate="2/s", senders=("s1",), name="aviso",
                                text="Aviso {{ nome }}")
    ledger = Ledger(open_ledger(ledger_url))
    runs = [plan(ledger, first, box), plan(ledger, second, box)]

    workers.start(root, worker_env(box, ledger_url))
    wait_until(lambda: all(ledger.get_run(r).status == "completed" for r in runs), 60,
               "both runs to complete", workers)

    stamps = send_times(box)["s1"]
    assert len(stamps) == 20
    # each run paced at 2/s alone would make 4/s together (5 sends in 1 s, 20 in under
    # 5 s); the session keeps 2/s between them. A send late by less than an interval is
    # counted at its scheduled instant (SenderPool.on_claim: lateness does not add up into
    # a slower rate), so the next one may follow it closer by that much: any 5 consecutive
    # sends span at least 3 intervals, the 20 at least 18 (less 0.1 s of arrival jitter)
    spans = [(b - a).total_seconds() for a, b in zip(stamps, stamps[4:], strict=False)]
    assert min(spans) >= 3 / RATE - 0.1, spans
    assert (stamps[-1] - stamps[0]).total_seconds() >= 18 / RATE - 0.1, stamps
    for run_id in runs:
        assert len(deliveries(ledger, run_id)) == 10
    ledger.close()
