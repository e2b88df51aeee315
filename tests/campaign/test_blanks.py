"""``[blanks]``: a blank CSV value is an error, skips its recipient, keeps the empty string
or takes a default, per column; the table is checked against the CSV's header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scheduler.campaign.exceptions import BlankValueError, DefinitionError
from scheduler.campaign.plan import build_plan
from scheduler.cli import app
from tests.factories import Project

CSV = (
    "Nome do Cliente;telefone;Data de Vencimento;observação\n"
    "Maria da Silva;(11) 98765-4321;10/03/2027;\n"
    ";(21) 99876-5432;11/03/2027;vip\n"
    "Ana Lima;(31) 99111-2222;;\n"
    "Rui Alves;(41) 99333-4444;12/03/2027;\n"
)
STEP = ('[[steps]]\ntype = "text"\n'
        'text = "Oi {{ nome_do_cliente }}, vence {{ data_de_vencimento|date_br }}"\n')


def _campaign(project: Project, blanks: str, csv: str = CSV) -> Path:
    return project.basic(STEP, extra=f"\n[blanks]\n{blanks}\n" if blanks else "", csv=csv)


def _rows(path: Path, *, strict: bool = True) -> tuple[list[dict[str, Any]], Any]:
    plan = build_plan(path, strict=strict)
    rows = [row for chunk in plan.chunks() for row in chunk]
    return rows, plan.stats


def test_without_blanks_a_blank_date_is_an_error_of_its_row_only(project: Project) -> None:
    rows, stats = _rows(_campaign(project, ""), strict=False)
    assert [(e.row, e.message) for e in stats.errors] == [
        (3, "cannot render: '' is not a date (expected dd/mm/yyyy or yyyy-mm-dd)")]
    assert rows[1]["payload"] == {"text": "Oi , vence 11/03/2027"}  # "keep": the empty name


def test_skip_leaves_the_recipient_out_with_its_reason_and_counts_it(project: Project) -> None:
    path = _campaign(project, '"Data de Vencimento" = "skip"\n'
                              'nome_do_cliente = { default = "cliente" }')
    rows, stats = _rows(path)  # strict, as a run plans: nothing raises
    assert [(r["row"], r["state"], r["reason"]) for r in rows] == [
        (1, "planned", None), (2, "planned", None),
        (3, "skipped", "blank_value: Data de Vencimento"), (4, "planned", None)]
    assert rows[1]["payload"] == {"text": "Oi cliente, vence 11/03/2027"}
    assert rows[1]["variables"]["nome_do_cliente"] == "cliente"  # stored as sent
    assert (stats.read, stats.valid, stats.blank_skipped) == (4, 3, 1)
    assert stats.skipped_per_step[0] == 1 and stats.planned_per_step[0] == 3


def test_error_refuses_the_plan_naming_the_file_row_and_column(project: Project) -> None:
    path = _campaign(project, 'default = "error"\nnome_do_cliente = "keep"')
    with pytest.raises(BlankValueError) as caught:
        _rows(path)
    issue = caught.value.issues[0]
    assert issue.file == str(project.root / "data" / "r.csv") and issue.row == 3
    assert issue.key == "blanks.default"
    assert issue.message.startswith(
        "blank value in column 'Data de Vencimento' (data_de_vencimento), which "
        'blanks.default = "error" refuses')
    _, stats = _rows(path, strict=False)  # validate: the same issue, every row checked
    assert [(e.row, e.key) for e in stats.errors] == [(3, "blanks.default")]


def test_the_default_rule_covers_only_the_columns_templates_name(project: Project) -> None:
    # "observação" is blank in three rows, but no template names it
    rows, stats = _rows(_campaign(project, 'default = "skip"'))
    assert [r["row"] for r in rows if r["state"] == "skipped"] == [2, 3]
    assert stats.blank_skipped == 2


def test_a_listed_column_is_governed_even_when_no_template_names_it(project: Project) -> None:
    rows, _stats = _rows(_campaign(project, 'default = "keep"\n"Observação" = "skip"'),
                         strict=False)
    assert [r["row"] for r in rows if r["state"] == "planned"] == [2]


def test_a_skipped_number_is_still_its_first_occurrence(project: Project) -> None:
    csv = CSV + "Ana Again;31991112222;20/03/2027;\n"
    rows, stats = _rows(_campaign(project, 'data_de_vencimento = "skip"', csv))
    assert [(r["row"], r["reason"]) for r in rows if r["state"] == "skipped"] == [
        (3, "blank_value: Data de Vencimento"), (5, "duplicate")]
    assert (stats.blank_skipped, stats.duplicates) == (1, 1)


def test_unknown_columns_and_the_phone_column_are_definition_errors(project: Project) -> None:
    path = _campaign(project, 'vencimento = "skip"\ntelefone = "error"')
    with pytest.raises(DefinitionError) as caught:
        build_plan(path)
    first, second = caught.value.issues
    assert first.file == str(path) and first.key == "blanks.vencimento"
    assert first.line == path.read_text().splitlines().index('vencimento = "skip"') + 1
    assert "no column of" in first.message
    assert "nome_do_cliente, data_de_vencimento, observacao" in first.message
    assert first.message.endswith("did you mean 'data_de_vencimento'?")
    assert second.key == "blanks.telefone" and "the phone column" in second.message


@pytest.mark.parametrize("rule", ['"skipp"', '{ default = "" }', '{ value = "x" }', "3"])
def test_a_rule_that_is_none_of_the_four_is_one_clear_error(project: Project,
                                                            rule: str) -> None:
    path = _campaign(project, f"data_de_vencimento = {rule}")
    with pytest.raises(DefinitionError) as caught:
        build_plan(path)
    (issue,) = caught.value.issues
    assert issue.key == "blanks.data_de_vencimento"
    assert issue.message.startswith('expected "error", "skip", "keep" or { default = "…" }')


def test_validate_counts_the_skipped_recipients(project: Project, monkeypatch,
                                                tmp_path: Path) -> None:
    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(tmp_path / "empty.toml"))
    path = _campaign(project, 'data_de_vencimento = "skip"')
    result = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["recipients"]["blank_skipped"] == 1
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert "skipped for a blank value ([blanks])" in result.stdout


def test_status_says_why_deliveries_were_skipped(project: Project, ledger, ledger_url: str,
                                                 monkeypatch, tmp_path: Path) -> None:
    from scheduler.usecases.planning import plan_run
    from tests.factories import T0

    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(tmp_path / "empty.toml"))
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", ledger_url)
    monkeypatch.setenv("COLUMNS", "80")
    csv = CSV + "Dup;31991112222;20/03/2027;\nBad;1234;20/03/2027;\n"
    run_id = plan_run(ledger, _campaign(project, 'data_de_vencimento = "skip"', csv),
                      start_at=T0)
    result = CliRunner().invoke(app, ["status", str(run_id), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["skipped_by_reason"] == {
        "blank_value": 1, "duplicate": 1, "invalid_number": 1}
    shown = CliRunner().invoke(app, ["status", str(run_id)]).stdout
    assert "skipped: blank_value 1 · duplicate 1 · invalid_number 1" in shown


def test_validate_reports_a_wrong_key_and_still_checks_every_row(project: Project) -> None:
    path = _campaign(project, 'vencimentos = "skip"\nnome_do_cliente = "error"')
    _, stats = _rows(path, strict=False)
    assert [(e.key, e.row) for e in stats.errors] == [
        ("blanks.vencimentos", None), ("blanks.nome_do_cliente", 2), ("steps[0].text", 3)]
