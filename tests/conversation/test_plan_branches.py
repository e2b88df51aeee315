"""``campaign validate`` and ``plan`` of the example conversation: valid, and the branches
drawn with their expected recipients at ``[replies] expected_rate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.commands.plan_branches import branch_lines, branches_of, step_estimates
from scheduler.settings.conversation import ConversationOptions, StepCondition
from tests.factories import REPO

EXAMPLE = REPO / "campaigns" / "conversa_confirmacao.toml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))


def test_the_example_conversation_validates() -> None:
    result = runner.invoke(app, ["validate", str(EXAMPLE), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["errors"] == []


def test_plan_draws_the_branches_at_the_expected_rate() -> None:
    result = runner.invoke(app, ["plan", str(EXAMPLE), "--json"])
    assert result.exit_code == 0, result.output
    branches = json.loads(result.stdout)["branches"]
    assert branches["expected_rate"] == 0.6
    assert [(s["name"], s["looks_at"], s["expected"]) for s in branches["steps"]] == [
        ("pergunta", None, 5), ("confirmar", 0, 2), ("reagendar", 0, 2), ("lembrete", 0, 2)]
    text = runner.invoke(app, ["plan", str(EXAMPLE)])
    assert text.exit_code == 0, text.output
    assert "branches at a 60% reply rate ([replies] expected_rate):" in text.stdout
    assert "└ step 3 'lembrete': ≈ 2" in text.stdout
    # the step table counts the branches as the tree does, marked as estimates
    rows = {line.split("│")[1].strip(): line.split("│")[5].strip()
            for line in text.stdout.splitlines()
            if line.startswith("│") and "messages/send/text" in line}
    assert rows == {"0": "5", "1": "≈ 2", "2": "≈ 2", "3": "≈ 2"}
    assert ("≈, ≤: recipients expected at a 60% reply rate ([replies] expected_rate); the"
            in text.stdout)
    assert "15 rows of those steps are planned, each sent only when its condition is met" \
        in text.stdout
    assert all(len(line) <= 80 for line in text.stdout.splitlines())


def test_a_branch_follows_its_step_and_reads_are_not_estimated() -> None:
    def cond(step: int, kind: str, looks_at: int = 0) -> StepCondition:
        return StepCondition(step=step, looks_at=looks_at, kind=kind, wait_s=60, text=kind)

    options = ConversationOptions(expected_rate=0.5, conditions=(
        cond(1, "replied"), cond(3, "not_read"), cond(4, "not_replied", looks_at=1)))
    report = branches_of(options, ["q", "yes", "thanks", "nudge", "again"], 100)
    assert [(s["expected"], s["up_to"]) for s in report["steps"]] == [
        (100, None), (50, None), (50, None), (None, 100), (25, None)]
    lines = branch_lines(report)
    assert lines[1:4] == ["  step 0 'q': ≈ 100", "  ├ step 1 'yes': ≈ 50", "  │ │ when replied"]
    assert "  │ ├ step 2 'thanks': ≈ 50" in lines and "  │ └ step 4 'again': ≈ 25" in lines
    assert "  └ step 3 'nudge': up to 100" in lines
    assert step_estimates(report) == {1: "≈ 50", 2: "≈ 50", 3: "≤ 100", 4: "≈ 25"}
    assert step_estimates(None) == {}
    assert all(len(line) <= 80 for line in lines)
