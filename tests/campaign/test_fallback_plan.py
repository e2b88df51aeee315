"""The plan of a campaign with second chances: rows that await a verdict are marked
``watch``, each recipient's step-0 row carries its fallback rendered (or why it has none),
and ``campaign plan`` says the attempts, their earliest waves and the fallback's reach."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.plan import build_plan
from scheduler.cli import app
from scheduler.ledger.runs import Ledger
from scheduler.settings.run import RunOptions
from tests.factories import REPO, Project

runner = CliRunner()
CSV = ("nome;telefone;obs\n"
       "Ana;(11) 98765-4321;x\n"           # mobile
       "Loja;(11) 3456-7890;x\n"           # landline: called, never an SMS
       "Bia;(21) 99876-5432;x\n"           # mobile, opted out
       "Ana de novo;11987654321;x\n"       # duplicate of Ana
       "Caio;(31) 98822-1045;\n")          # mobile, blank obs
CAMPAIGN = """name = "ura"
channel = "voice"
[recipients]
file = "data/r.csv"
phone_column = "telefone"
suppression = ["data/optout.txt"]
[schedule]
timezone = "America/Sao_Paulo"
window = "09:00-20:00"
[[steps]]
flowId = "flow-1"
min_talk = "10s"
retry = [
  { on = "no_answer", delay = "2h", max_attempts = 3, window = "09:00-12:00" },
  { on = "busy", delay = "10m", max_attempts = 4 },
]
[[steps]]
delay = "1h"
audioUrl = "https://example.com/a.mp3"
[fallback]
after = "6h"
when = "not_answered"
channel = "sms"
step = { text = "Oi {{ nome }}, ligamos para você" }
"""


@pytest.fixture(autouse=True)
def _no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))


def write(project: Project, text: str = CAMPAIGN) -> Path:
    project.write("data/r.csv", CSV)
    project.write("data/optout.txt", "21998765432\n")
    return project.campaign(text)


def rows_of(path: Path, **kw: Any) -> list[dict[str, Any]]:
    plan = build_plan(path, **kw)
    return [row for chunk in plan.chunks() for row in chunk]


def test_rows_of_watched_steps_await_a_verdict(project: Project) -> None:
    rows = rows_of(write(project))
    by = {(r["row"], r["step"]): r for r in rows}
    # step 0 has rules and the fallback: watched; step 1 has neither
    assert [by[(n, 0)]["watch"] for n in (1, 2, 3, 4, 5)] == [1, 1, None, None, 1]
    assert {by[(n, 1)]["watch"] for n in (1, 2, 3, 4, 5)} == {None}


def test_step_0_rows_carry_the_recipients_fallback(project: Project) -> None:
    rows = rows_of(write(project))
    by = {(r["row"], r["step"]): r for r in rows}
    assert by[(1, 0)]["fallback"] == {
        "kind": "sms", "path": "/api/v1/sms/send",
        "payload": {"text": "Oi Ana, ligamos para você"}}
    # a landline is called, but an SMS cannot reach it
    assert by[(2, 0)]["state"] == "planned"
    assert by[(2, 0)]["fallback"] == {"none": "landline: SMS needs a mobile number"}
    # opted out and duplicate: nothing at all
    assert by[(3, 0)]["fallback"] is None and by[(4, 0)]["fallback"] is None
    assert {r["fallback"] for r in rows if r["step"] == 1} == {None}


def test_the_plan_counts_who_the_fallback_can_reach(project: Project) -> None:
    plan = build_plan(write(project))
    stats = plan.consume()
    assert stats.fallback_eligible == 2
    assert dict(stats.fallback_none) == {"landline: SMS needs a mobile number": 1}
    assert stats.fallback_segments == 2  # one UCS-2 segment each ("você")


def test_a_campaign_without_second_chances_watches_nothing(project: Project) -> None:
    text = re.sub(r"min_talk.*?\n]\n", "", CAMPAIGN, flags=re.S).split("[fallback]")[0]
    assert "retry" not in text
    rows = rows_of(write(project, text))
    # its rows have no keys of second chances (the ledger reads them as None)
    assert rows and not any("watch" in r or "fallback" in r for r in rows)


def test_a_fallback_render_error_names_the_row_and_field(project: Project) -> None:
    path = write(project, CAMPAIGN.replace("{{ nome }}", "{{ obs|upper }}{{ falta }}"))
    with pytest.raises(CampaignError) as caught:
        rows_of(path)
    issue = caught.value.issues[0]
    assert (issue.row, issue.key) == (1, "fallback.step.text")
    assert "undefined variable 'falta'" in issue.message


def test_an_empty_rendered_fallback_is_an_error_of_its_row(project: Project) -> None:
    path = write(project, CAMPAIGN.replace("Oi {{ nome }}, ligamos para você", "{{ obs }}"))
    plan = build_plan(path, strict=False)
    stats = plan.consume()
    assert [(e.row, e.key) for e in stats.errors] == [(5, "fallback.step.text")]
    # row 5 is still called; only row 1 has a fallback to send
    assert stats.fallback_eligible == 1 and stats.planned_per_step[0] == 3


def _plan(path: Path, *extra: str) -> Any:
    result = runner.invoke(app, ["plan", str(path), "--start", "2027-03-08T10:00", *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_plan_json_says_the_attempts_and_the_fallback(project: Project) -> None:
    report = json.loads(_plan(write(project), "--json"))["retries"]
    step = report["steps"][0]
    assert (step["step"], step["recipients"], step["max_attempts"], step["max_sends"],
            step["min_talk_s"]) == (0, 3, 4, 12, 10.0)
    no_answer, busy = step["rules"]
    assert (no_answer["on"], no_answer["delay_s"], no_answer["window"]) == (
        "no_answer", 7200, "09:00-12:00")
    # 10:00 -03 start: attempt 2 at 12:00 is past the 09:00-12:00 window: next day 09:00;
    # attempt 3 two hours later, 11:00
    assert [(w["attempt"], w["earliest"]) for w in no_answer["waves"]] == [
        (2, "2027-03-09T12:00:00+00:00"), (3, "2027-03-09T14:00:00+00:00")]
    assert [w["earliest"][11:16] for w in busy["waves"]] == ["13:10", "13:20", "13:30"]
    assert [s["step"] for s in report["steps"]] == [0]
    assert report["fallback"] == {
        "after_s": 21600, "when": "not_answered", "channel": "sms",
        "earliest": "2027-03-08T19:00:00+00:00", "rate_per_s": None, "eligible": 2,
        "not_eligible": {"landline: SMS needs a mobile number": 1},
        "not_eligible_total": 1, "sms_segments": 2}


def test_plan_text_says_the_attempts_within_80_columns(project: Project) -> None:
    out = _plan(write(project))
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "retries (windows in each recipient's own zone):" in out
    assert "step 1 (voice): 3 recipients, at most 12 calls (4 each)" in out
    assert "not answered: again 2 h 00 min later, up to 3 calls, within 09:00-12:00" in out
    assert "earliest: attempt 2 at 09:00, 3 at 11:00 (2027-03-09 -03:00)" in out
    assert "an answered call under 10 s counts as not answered" in out
    assert "fallback: sms 6 h 00 min after the first send, if not answered" in out
    assert "at the earliest 2027-03-08 16:00 -03:00; 2 numbers can get it" in out
    assert "1 landline: SMS needs a mobile number" in out


def test_the_example_campaign_plans_its_retries_and_fallback() -> None:
    report = json.loads(_plan(REPO / "campaigns" / "ura_retries.toml", "--json"))
    assert [r["on"] for r in report["retries"]["steps"][0]["rules"]] == ["no_answer", "busy"]
    fallback = report["retries"]["fallback"]
    assert fallback["eligible"] > 0 and fallback["not_eligible_total"] > 0
    assert report["errors"] == []


def test_planning_a_run_makes_its_fallback_run(project: Project, ledger: Ledger) -> None:
    """The parent run stores its second chances; its fallback run is made with it, empty,
    on the fallback's channel and options; a re-plan keeps that same fallback run."""
    from scheduler.usecases.planning import plan_run, replan_run

    path = write(project)
    start = datetime(2027, 3, 8, 13, tzinfo=UTC)
    run_id = plan_run(ledger, path, start_at=start)
    parent = ledger.get_run(run_id)
    assert parent.options is not None
    recycle = RunOptions.from_json(parent.options).recycle
    assert recycle is not None and recycle.fallback is not None and recycle.watches(0)
    child_id = ledger.fallback_run_of(run_id)
    assert child_id is not None and child_id != run_id
    child = ledger.get_run(child_id)
    assert child.channel == "sms" and child.options is not None
    options = RunOptions.from_json(child.options)
    assert (options.senders, options.step_delays_s, options.recycle, options.window) == (
        ("account",), (0.0,), None, RunOptions.from_json(parent.options).window)
    with ledger.engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT row, step, watch, fallback FROM deliveries WHERE run_id = :r "
            "AND state = 'planned' ORDER BY row, step"), {"r": run_id}).all()
    assert [(r, s, w) for r, s, w, _f in stored] == [
        (1, 0, 1), (1, 1, None), (2, 0, 1), (2, 1, None), (5, 0, 1), (5, 1, None)]
    fallbacks = {r: json.loads(f) for r, s, _w, f in stored if s == 0}
    assert fallbacks[1]["payload"] == {"text": "Oi Ana, ligamos para você"}
    assert fallbacks[2] == {"none": "landline: SMS needs a mobile number"}
    replan_run(ledger, parent, path, start_at=start)
    assert ledger.fallback_run_of(run_id) == child_id
