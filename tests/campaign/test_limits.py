"""Limits a campaign sets or the service imposes: ``max_invalid`` and the body bounds.

Over ``max_invalid``, ``validate`` and ``plan`` fail with the same message, and a run's plan
raises it before anything is stored. A rendered body over the service's bounds is an error
of its row, before the first send.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from scheduler.campaign.bounds import body_checker
from scheduler.campaign.definition import BoundsSpec
from scheduler.campaign.exceptions import (
    DefinitionError,
    InvalidRenderedBodyError,
    TooManyInvalidNumbers,
)
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.plan import build_plan
from scheduler.cli import app
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from tests.factories import Project

runner = CliRunner()
#: 10 rows: 7 mobiles, a landline, a toll-free number and a number too short.
TEN = (
    "nome;telefone\n"
    + "".join(f"n{i};1198765432{i}\n" for i in range(7))
    + "Fixo;(11) 3333-4444\nGratis;0800 123 4567\nCurto;1234\n"
)
STEP = '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n'


@pytest.fixture(autouse=True)
def _no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configured service: ``plan`` reads no limits from anywhere."""
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))


def _with_limit(project: Project, limit: str) -> Path:
    path = project.basic(STEP, csv=TEN)
    path.write_text(
        path.read_text().replace(
            'phone_column = "telefone"', f'phone_column = "telefone"\nmax_invalid = {limit}'
        )
    )
    return path


@pytest.mark.parametrize(
    ("limit", "allowed"), [('"20%"', '"20%" allows (2)'), ("2", "= 2 allows (2)")]
)
def test_over_max_invalid_validate_and_plan_fail_alike(
    project: Project, limit: str, allowed: str
) -> None:
    path = _with_limit(project, limit)
    checked = runner.invoke(app, ["validate", str(path), "--json"])
    planned = runner.invoke(app, ["plan", str(path), "--json", "--start", "2030-01-07T10:00"])
    assert checked.exit_code == planned.exit_code == 1
    (error,) = json.loads(checked.stdout)["errors"]
    assert json.loads(planned.stdout)["errors"] == [error]
    assert error["key"] == "recipients.max_invalid" and error["line"] == 7
    assert error["message"].startswith(
        "3 of 10 numbers (30.0%) are invalid or cannot be reached on WhatsApp"
    )
    assert allowed in error["message"]
    with pytest.raises(TooManyInvalidNumbers) as caught:
        build_plan(path).consume()
    assert caught.value.issues[0].message == error["message"]


def test_within_max_invalid_is_fine(project: Project) -> None:
    path = _with_limit(project, '"30%"')
    assert runner.invoke(app, ["validate", str(path)]).exit_code == 0
    assert build_plan(path).consume().invalid_total == 3


def test_a_run_over_max_invalid_stores_nothing(project: Project, ledger_url: str) -> None:
    from scheduler.usecases.planning import plan_run

    path = _with_limit(project, '"10%"')
    engine = open_ledger(ledger_url)
    try:
        with pytest.raises(TooManyInvalidNumbers, match="max_invalid"):
            plan_run(Ledger(engine), path, start_at=datetime(2030, 1, 7, 12, tzinfo=UTC))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM deliveries")).scalar() == 0
    finally:
        engine.dispose()


def test_a_wrong_max_invalid_names_the_field(project: Project) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_campaign(_with_limit(project, '"dois"'))
    (issue,) = caught.value.issues
    assert issue.key == "recipients.max_invalid" and issue.line == 7
    assert "'dois'" in issue.message and "2%" in issue.message


def test_a_text_over_the_bound_names_its_row(project: Project) -> None:
    csv = "nome;telefone\nAna;11987654321\n" + "L" * 60 + ";11987654323\n"
    path = project.basic(STEP, csv=csv, extra="[bounds]\ntext = 50\n")
    with pytest.raises(InvalidRenderedBodyError) as caught:
        build_plan(path).consume()
    (issue,) = caught.value.issues
    assert issue.row == 2 and issue.key == "steps[0].text"
    assert "63 characters, over the limit of 50 (bounds.text)" in issue.message


def test_an_empty_list_title_is_refused_per_row_or_in_the_file(project: Project) -> None:
    listing = (
        '[[steps]]\ntype = "list"\ndescription = "Escolha"\nbuttonText = "Ver"\n'
        'title = "{{ titulo }}"\n[[steps.sections]]\n'
        'rows = [{ rowId = "a", title = "A" }]\n'
    )
    csv = "nome;telefone;titulo\nAna;11987654321;Ofertas\nBia;11987654322;\n"
    path = project.basic(listing, csv=csv)
    stats = build_plan(path, strict=False).consume()
    (issue,) = stats.errors
    assert issue.row == 2 and issue.key == "steps[0].title" and "empty" in issue.message
    constant = project.basic(listing.replace("{{ titulo }}", ""), csv=csv)
    with pytest.raises(DefinitionError) as caught:
        load_campaign(constant)
    assert [i.key for i in caught.value.issues] == ["steps[0].title"]


@pytest.mark.parametrize(("kind", "key"), [("text", "text"), ("image", "caption")])
def test_a_text_at_its_bound_passes_and_one_character_more_does_not(kind: str,
                                                                   key: str) -> None:
    check = body_checker(kind, BoundsSpec(text=10, caption=5))
    assert check is not None
    limit = 10 if kind == "text" else 5
    assert check({key: "é" * limit}) == []
    assert check({}) == [] and check({key: None}) == [] and check({key: 12345678901}) == []
    ((path, message),) = check({key: "é" * (limit + 1)})
    assert path == key and f"is {limit + 1:,} characters, over the limit of {limit:,}" in message
