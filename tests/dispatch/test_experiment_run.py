"""An A/B test dispatched on a simulated clock: the test share first, the wait said on the
timeline with its time, the decision once the wait has passed, the winner to the rest."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update

from scheduler.core.timeutil import SimulatedClock
from scheduler.dispatch.dispatcher import RunSetup, Timing
from scheduler.experiments.exact import exact_split
from scheduler.ledger import access, rows
from scheduler.ledger.queries import experiments as xq
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import SENT_STATES
from scheduler.usecases.planning import plan_run
from scheduler.wiring import dispatch_run, run_store
from tests.factories import T0, Project, open_test_ledger

N = 400
CAMPAIGN = """
name = "ab"
senders = ["s1"]
[recipients]
file = "data/r.csv"
[pace]
rate = "50/s"
jitter = "0"
[[steps]]
type = "text"
variants = [{name = "A", text = "Oi {{ nome }} [A]"}, {name = "B", text = "Olá {{ nome }} [B]"}]
[experiment]
test_share = "30%"
wait = "2h"
metric = "reply"
min_per_variant = 20
"""


def _project(root: Path) -> Path:
    root.mkdir()
    project = Project.empty(root)
    project.write("data/r.csv", "nome;telefone\n" + "".join(
        f"P{i};+55 11 9{i:08d}\n" for i in range(N)))
    return project.campaign(CAMPAIGN, "ab.toml")


def _rows(ledger: Ledger, run_id: int) -> list[dict]:
    with access.read(ledger.engine, "test") as conn:
        return [dict(r._mapping) for r in conn.execute(
            select(deliveries).where(deliveries.c.run_id == run_id))]


async def test_test_share_then_wait_then_the_winner_to_the_rest(
        tmp_path: Path, ledger_url: str, service_factory) -> None:
    service = service_factory(reply_rate=0.0, delivered_rate=0.0)
    await service.connect("s1")
    clock = SimulatedClock(T0)
    path = _project(tmp_path / "p")
    with open_test_ledger(ledger_url, clock) as ledger:
        run_id = plan_run(ledger, path, start_at=T0, rehearsal=True)
        assert set(ledger.counts(run_id)) == {"planned", "held"}
        replied: dict[str, bool] = {}

        async def sleep(seconds: float) -> None:
            # the recipients of the test share answer once it is sent: every B, one A in 10
            if not replied and ledger.counts(run_id).get("planned", 0) == 0:
                for row in _rows(ledger, run_id):
                    if row["state"] in SENT_STATES:
                        replied[row["to"]] = row["variant"] == "B" or row["row"] % 10 == 0
                with access.transaction(ledger.engine, "test") as conn:
                    conn.execute(update(deliveries).where(
                        deliveries.c.run_id == run_id,
                        deliveries.c.to.in_([to for to, yes in replied.items() if yes]))
                        .values(replied_at=clock()))
            await clock.sleep(seconds)

        setup = RunSetup(timing=Timing.simulated_by(clock, sleep), rng=random.Random(1))
        async with service.client() as client:
            result = await dispatch_run(run_store(ledger, run_id), client,
                                        ledger.get_run(run_id), setup)
        assert result.status == "completed"
        rows = _rows(ledger, run_id)
        with access.read(ledger.engine, "test") as conn:
            experiment = xq.read(conn, run_id)
    assert experiment is not None and experiment.decision is not None
    assert experiment.winner == experiment.goes == "B"
    assert experiment.decided_at is not None and experiment.test_sent_at is not None
    # decided once the wait had passed since the test share's last send, on the run's clock
    assert experiment.decided_at >= experiment.test_sent_at + timedelta(hours=2)
    test = [r for r in rows if r["to"] in replied]
    rest = [r for r in rows if r["to"] not in replied]
    assert len(test) == experiment.test_size and len(rest) == experiment.rest_size
    assert all(r["dispatched_at"] <= experiment.test_sent_at for r in test)
    assert all(r["dispatched_at"] >= experiment.decided_at for r in rest)
    assert all(r["variant"] == "B" and "[B]" in json.loads(r["payload"])["text"]
               for r in rest)
    assert len(test) == 120  # 30% of 400, counted (scheduler.experiments.exact)
    split = exact_split("ab", [r["to"] for r in rows], 0.3, [("A", 1), ("B", 1)])
    for r in test:  # the test share got the variant planned for it, 60 each
        assert split.assign(r["to"]) == (r["variant"], True)
    assert Counter(r["variant"] for r in test) == {"A": 60, "B": 60}
    sends = service.sends()
    assert len(sends) == N and len({s["to"] for s in sends}) == N  # nobody twice
    arms = {a["name"]: a for a in experiment.decision["arms"]}
    assert arms["B"]["sends"] + arms["A"]["sends"] == len(test)
    assert arms["B"]["rate"] == 1.0
    kinds = [e.kind for e in result.timeline]
    wait = next(e for e in result.timeline if e.kind == "experiment_wait")
    assert wait.until == experiment.test_sent_at + timedelta(hours=2)
    assert "decides at" in wait.what
    decided = next(e for e in result.timeline if e.kind == "experiment_decided")
    assert decided.what.startswith("A/B test decided: B wins")
    assert kinds.index("experiment_wait") < kinds.index("experiment_decided")


def test_a_replan_keeps_each_recipients_variant_and_a_decided_winner(
        tmp_path: Path, ledger_url: str) -> None:
    """--replan of a run whose test was decided: the test share keeps its variants, the
    rest planned again is given the decided winner at once (not held again)."""
    from scheduler.usecases.planning import replan_run

    path = _project(tmp_path / "p")
    with open_test_ledger(ledger_url, SimulatedClock(T0)) as ledger:
        run_id = plan_run(ledger, path, start_at=T0, rehearsal=True)
        before = {r["to"]: r["variant"] for r in _rows(ledger, run_id)}
        with access.transaction(ledger.engine, "test") as conn:  # the test share is sent
            conn.execute(update(deliveries).where(deliveries.c.run_id == run_id,
                                                  deliveries.c.state == "planned")
                         .values(state="sent", dispatched_at=T0))
        store = run_store(ledger, run_id).experiment
        verdict = store.decide_experiment(
            T0 + timedelta(hours=3),
            lambda _row, _counts: rows.ExperimentVerdict(winner="A", goes="A", decision="{}"))
        assert verdict is not None
        # the new plan holds the rest again; the decided test gives them A at once
        written, _dropped = replan_run(ledger, ledger.get_run(run_id), path,
                                       start_at=T0 + timedelta(hours=4))
        assert written
        after = {r["to"]: (r["variant"], r["state"]) for r in _rows(ledger, run_id)}
    assert set(after) == set(before)
    for to, variant in before.items():
        if variant is not None:  # the test share: sent, its variant kept
            assert after[to] == (variant, "sent")
        else:  # the rest: planned again with the decided winner, not held
            assert after[to] == ("A", "planned")
