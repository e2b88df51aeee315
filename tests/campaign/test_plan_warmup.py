"""``campaign plan`` with warm-up on in ``config.toml``: the estimate caps each warming
sender day by day, from its warm-up day in the ledger, and says where it is."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger import access
from scheduler.ledger.queries import sender_profiles as spq
from tests.factories import Project, command_project, open_test_ledger

runner = CliRunner()
START = "2027-03-08T09:00"  # a Monday, São Paulo
MONDAY = date(2027, 3, 8)
SP = ZoneInfo("America/Sao_Paulo")


@pytest.fixture
def campaign(project: Project, monkeypatch: pytest.MonkeyPatch, ledger_url: str) -> Path:
    """100 recipients, senders s1 and s2, one text each, 60 a minute per sender."""
    command_project(project.root, monkeypatch, ledger_url)
    rows = "".join(f"N{i};55119{i:08d}\n" for i in range(1, 201))
    project.write("data/r.csv", "nome;telefone\n" + rows)
    return project.campaign(
        'name = "w"\nsenders = ["s1", "s2"]\n'
        '[schedule]\ntimezone = "America/Sao_Paulo"\n'
        '[pace]\nrate = "60/min"\n'
        '[recipients]\nfile = "data/r.csv"\nphone_column = "telefone"\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n')


def _plan(path: Path, *options: str) -> Any:
    """The plan's JSON with ``--json``, else its text."""
    result = runner.invoke(app, ["plan", str(path), "--start", START, *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if options else result.stdout


def _local_date(moment: str) -> date:
    return datetime.fromisoformat(moment).astimezone(SP).date()


def test_warm_up_off_by_default_changes_nothing(campaign: Path) -> None:
    report = _plan(campaign, "--json")
    assert report["warmup"] == []
    assert _local_date(report["finish"]) == MONDAY  # 100 a sender at one a second
    assert "warming" not in _plan(campaign)


def test_new_senders_are_capped_20_36_65_and_the_plan_says_so(
        campaign: Path, project: Project) -> None:
    (project.root / "config.toml").write_text('[senders]\nwarmup = "default"\n'
                                              '[senders.warmup_of]\ns2 = "off"\n')
    report = _plan(campaign, "--json")
    assert [w["sender"] for w in report["warmup"]] == ["s1"]
    assert report["warmup"][0] == {
        "sender": "s1", "day": 1, "days": 8, "cap_today": 20, "first_cap": 20,
        "growth": 1.8, "line": "s1 warming: day 1 of 8, 20 today"}
    s1, s2 = report["senders"]
    assert s1["deliveries"] == s2["deliveries"] == 100
    assert _local_date(s1["finish"]) == date(2027, 3, 10)  # 20 + 36 + 44
    assert _local_date(s2["finish"]) == MONDAY
    assert report["finish"] == s1["finish"]
    text = _plan(campaign)
    assert "s1 warming: day 1 of 8, 20 today" in text.splitlines()
    assert all(len(line) <= 80 for line in text.splitlines())


def test_a_sender_further_up_its_ramp_starts_from_its_day_in_the_ledger(
        campaign: Path, project: Project, ledger_url: str) -> None:
    (project.root / "config.toml").write_text('[senders]\nwarmup = "default"\n')
    with open_test_ledger(ledger_url) as ledger, \
            access.transaction(ledger.engine, "a sender on day 3") as conn:
        spq.ensure_profiles(conn, ["s1"], datetime(2027, 3, 6, 12, 0, tzinfo=SP))
        spq.advance_warm_day(conn, "s1", MONDAY, 3)
    report = _plan(campaign, "--json")
    assert [w["line"] for w in report["warmup"]] == [
        "s1 warming: day 3 of 8, 65 today", "s2 warming: day 1 of 8, 20 today"]
    s1, s2 = report["senders"]
    assert _local_date(s1["finish"]) == date(2027, 3, 9)  # 65 + 35
    assert _local_date(s2["finish"]) == date(2027, 3, 10)
