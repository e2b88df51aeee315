"""A run's page shows its A/B test: the decision in words and each variant's numbers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from scheduler.core.time_words import local_time
from scheduler.dispatch.dispatcher.experiment import judge
from scheduler.experiments import Decision
from scheduler.ledger import access, rows
from scheduler.ledger.experiment_store import ExperimentStore
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from tests.dashboard.web_support import project_settings, section, served
from tests.factories import T0, FakeClock, number

PLAN = rows.ExperimentPlan(variants=[("A", 1.0), ("B", 1.0)], control="A", settings={
    "step": 0, "metric": "reply", "wait_s": 3600.0, "confidence": 0.95,
    "min_per_variant": 0, "guardrail": "opt_out", "fallback": "A", "test_share": 0.5})


def _rows(n: int) -> list[dict]:
    return [{"row": i + 1, "to": number(i), "step": 0, "kind": "text",
             "path": "/api/v1/messages/send/text", "payload": {"text": f"{'AB'[i % 2]} <b>"},
             "variables": {}, "region": "BR", "state": "planned", "reason": None,
             "variant": "AB"[i % 2], "choices": None} for i in range(n)]


def test_the_run_page_shows_the_decision(ledger: Ledger, clock: FakeClock, ledger_url: str,
                                         tmp_path: Path) -> None:
    run_id = ledger.create_run(campaign_name="ab", channel="whatsapp", definition_path="t",
                               definition={}, delivery_mode="at-most-once",
                               timezone="America/Sao_Paulo")
    ledger.store_plan(run_id, [_rows(40)], start_at=T0, experiment=PLAN)
    with access.transaction(ledger.engine, "test") as conn:
        conn.execute(update(deliveries).where(deliveries.c.run_id == run_id)
                     .values(state=S.SENT, dispatched_at=T0))
        conn.execute(update(deliveries).where(deliveries.c.run_id == run_id,
                                              deliveries.c.variant == "B")
                     .values(replied_at=T0))
    at = T0 + timedelta(hours=2)

    def verdict(row: rows.ExperimentRow,
                counts: dict[str, rows.ArmCount]) -> rows.ExperimentVerdict:
        decision = judge(row, counts, at)
        return rows.ExperimentVerdict(decision.winner, decision.goes, decision.model_dump_json())

    stored = ExperimentStore(ledger, run_id).decide_experiment(at, verdict)
    assert stored is not None
    decision = Decision.model_validate_json(stored.decision)
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        html = web.get(f"/runs/{run_id}").text
    shown = section(html, "experiment")
    assert "A/B test on the reply rate" in shown
    assert decision.reason.split(":")[0] in shown  # "B wins"
    assert "B: 20/20 reply rate 100.0%" in shown and "A: 0/20 reply rate 0.0%" in shown
    assert f"decided {local_time(at, 'America/Sao_Paulo')}" in shown
