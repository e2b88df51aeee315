"""``[audience]`` from the campaign file to the engine: parsed, checked at its key, stored
with the run (an old run without it still loads), on the engine's options, and one line of
``campaign plan``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scheduler.campaign.exceptions import DefinitionError
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.options import run_options
from scheduler.cli import app
from scheduler.commands.plan_text import audience_line
from scheduler.dispatch.options import DispatchOptions
from scheduler.settings.run import RunOptions, from_snapshot
from tests.factories import REPO, Project

runner = CliRunner()
AUDIENCE = "[audience]\nmax_per_day = 2\nmax_per_week = 5\nhold_unengaged_after = 5\n"
START = datetime(2027, 3, 8, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configured service: plan limits come from the file."""
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))


def test_the_rules_reach_the_run_and_the_engine(project: Project) -> None:
    campaign = load_campaign(project.basic(extra=AUDIENCE))
    options = run_options(campaign)
    assert (options.max_per_day, options.max_per_week, options.hold_unengaged_after) == \
        (2, 5, 5)
    stored = RunOptions.from_json(options.to_json(), run_id=1)
    assert stored == options
    # an old run's snapshot gives the same
    assert from_snapshot(campaign.spec.model_dump(mode="json")) == options
    engine = DispatchOptions.for_run(stored, start=START)
    assert (engine.max_per_day, engine.max_per_week, engine.hold_unengaged_after) == \
        (2, 5, 5)
    # without [audience]: no rule anywhere
    plain = run_options(load_campaign(project.basic()))
    assert (plain.max_per_day, plain.max_per_week, plain.hold_unengaged_after) == \
        (None, None, None)


def test_options_stored_before_audience_existed_still_load(project: Project) -> None:
    stored = json.loads(run_options(load_campaign(project.basic())).to_json())
    for key in ("max_per_day", "max_per_week", "hold_unengaged_after"):
        del stored[key]
    old = RunOptions.from_json(json.dumps(stored), run_id=3)
    assert (old.max_per_day, old.max_per_week, old.hold_unengaged_after) == (None, None, None)
    engine = DispatchOptions.for_run(old, start=START)
    assert (engine.max_per_day, engine.max_per_week, engine.hold_unengaged_after) == \
        (None, None, None)


def test_a_wrong_rule_is_an_error_at_its_key_and_line(project: Project) -> None:
    path = project.basic(extra="[audience]\nmax_per_day = 0\nmax_per_week = \"lots\"\n"
                               "hold_unread = 3\n")
    with pytest.raises(DefinitionError) as caught:
        load_campaign(path)
    issues = {issue.key: issue for issue in caught.value.issues}
    assert {"audience.max_per_day", "audience.max_per_week", "audience.hold_unread"} <= \
        set(issues)
    assert "greater than or equal to 1" in issues["audience.max_per_day"].message
    text = path.read_text()
    assert issues["audience.max_per_day"].line == \
        text.splitlines().index("max_per_day = 0") + 1


def test_plan_says_the_rules_in_one_line(project: Project) -> None:
    path = project.basic(extra=AUDIENCE)
    report = json.loads(runner.invoke(app, ["plan", str(path), "--start",
                                            "2027-03-08T09:00", "--json"]).stdout)
    assert report["audience"] == {"max_per_day": 2, "max_per_week": 5,
                                  "hold_unengaged_after": 5}
    text = runner.invoke(app, ["plan", str(path), "--start", "2027-03-08T09:00"]).stdout
    assert ("audience: at most 2 per day, 5 per week per number; hold after 5 unread"
            in text.splitlines())
    plain = runner.invoke(app, ["plan", str(project.basic()), "--start",
                                "2027-03-08T09:00"]).stdout
    assert "audience" not in plain
    assert audience_line({"max_per_week": 3}) == "audience: at most 3 per week per number"
    assert audience_line({"hold_unengaged_after": 4}) == "audience: hold after 4 unread"


def test_an_example_campaign_uses_audience() -> None:
    spec = load_campaign(REPO / "campaigns" / "promo_interactive.toml").spec
    assert spec.audience.max_per_day is not None
