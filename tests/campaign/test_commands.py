"""``campaign validate``, ``preview`` and ``plan`` through the real CLI app."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.commands import plan as plan_commands
from scheduler.service.requests import SEND_KINDS, wire_body
from tests.factories import REPO, Project
from tests.incli import campaign

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configured service: plan limits come from the file."""
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")  # a named settings file must exist
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))


def test_validate_json_shape_for_the_demo() -> None:
    result = runner.invoke(app, ["validate", str(REPO / "campaigns" / "demo.toml"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"recipients", "errors"}
    recipients = report["recipients"]
    assert {"read", "valid", "duplicates", "suppressed", "invalid"} <= set(recipients)
    assert report["errors"] == []
    assert recipients["read"] == recipients["valid"] + recipients["duplicates"] + recipients[
        "suppressed"
    ] + len(recipients["invalid"])
    for item in recipients["invalid"]:
        assert set(item) == {"row", "value", "reason"} and item["row"] >= 1


def test_validate_reports_rows_and_exits_1(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext = "{{ apelido }}"\n')
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["recipients"]["invalid"] == [{"row": 3, "value": "1234", "reason": "too short"}]
    # every row lacks the column the same way: one error, with the columns the CSV has
    assert [e["row"] for e in report["errors"]] == [1]
    error = report["errors"][0]
    assert error["key"] == "steps[0].text" and "apelido" in error["message"]
    assert "nome, cidade, valor, to" in error["message"]
    assert error["file"] == str(path.resolve()) and error["line"] == 10


def test_validate_definition_errors_all_at_once(project: Project) -> None:
    path = project.basic(
        '[[steps]]\ntype = "poll"\nquestion = "q"\noptions = ["só uma"]\n',
        extra='[pace]\nrate = "muito"\n',
    )
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1
    keys = {e["key"] for e in json.loads(result.stdout)["errors"]}
    assert keys == {"pace.rate", "steps[0].options"}


def test_validate_human_output(project: Project) -> None:
    result = runner.invoke(app, ["validate", str(REPO / "campaigns" / "demo.toml")])
    assert result.exit_code == 0 and "valid" in result.stdout and "too short" in result.stdout


def test_preview_json_bodies_are_what_the_models_produce() -> None:
    demo = REPO / "campaigns" / "demo.toml"
    result = runner.invoke(app, ["preview", str(demo), "--rows", "3", "--json"])
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)
    assert len({i["row"] for i in items}) == 3 and len(items) == 6
    for item in items:
        assert set(item) == {"row", "step", "to", "endpoint", "body"}
        body = item["body"]
        assert body["sessionId"] == "demo-01" and body["to"] == item["to"]
        kind = next(k for k in SEND_KINDS.values() if k.path == item["endpoint"])
        assert wire_body(kind.model.model_validate(body)) == body
    assert items[0]["endpoint"] == "/api/v1/messages/send/text"
    assert items[1]["endpoint"] == "/api/v1/messages/send/image"


def test_preview_human_output() -> None:
    result = runner.invoke(app, ["preview", str(REPO / "campaigns" / "poll_survey.toml")])
    assert result.exit_code == 0 and "/api/v1/messages/send/poll" in result.stdout


def _paced(project: Project, extra_pace: str = "") -> Path:
    csv = "telefone;nome\n" + "".join(f"119{i:08d};n{i}\n" for i in range(100))
    return project.basic(
        '[[steps]]\ntype = "text"\ntext = "oi {{ nome }}"\n',
        extra='[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "09:00-10:00"\n'
        'days = "mon-fri"\nlatest = "2025-03-07T18:00:00"\n'
        f'[pace]\nrate = "1/min"\ndaily_cap = 30\n{extra_pace}',
        csv=csv,
    )


def test_plan_estimate_with_window_days_and_daily_cap(project: Project) -> None:
    # 50 sends per sender at 1/min, 30 a day, 09:00-10:00 on weekdays, from Friday 09:00:
    # 30 on Friday (09:00-09:29), nothing at the weekend, 20 on Monday (09:00-09:19).
    path = _paced(project)
    result = runner.invoke(app, ["plan", str(path), "--start", "2025-03-07T09:00", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # --json says times in UTC (ISO 8601), with the zone the text shows them in
    assert report["timezone"] == "America/Sao_Paulo"
    assert report["start"] == "2025-03-07T12:00:00+00:00"
    assert report["finish"] == "2025-03-10T12:19:00+00:00"
    assert [s["deliveries"] for s in report["senders"]] == [50, 50]
    assert report["limits_source"] == "none" and report["mean_interval_s"] == 60
    assert report["finishes_before_latest"] is False
    assert report["steps"][0]["planned"] == 100


def test_plan_estimate_with_plan_limit_from_the_file(project: Project) -> None:
    path = _paced(project, "plan_limit = 25\n")
    result = runner.invoke(app, ["plan", str(path), "--start", "2025-03-07T09:00", "--json"])
    report = json.loads(result.stdout)
    assert report["limits_source"] == "file"
    assert [s["plan_limit"] for s in report["senders"]] == [25, 25]
    assert report["finish"] == "2025-03-10T12:24:00+00:00"


def test_plan_human_output_and_jitter_mean(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_commands, "clock", lambda: datetime(2026, 1, 5, tzinfo=UTC))
    result = runner.invoke(app, ["plan", str(REPO / "campaigns" / "welcome.toml")])
    assert result.exit_code == 0, result.output
    assert "finish 2027-03-08 09:12 -03:00 (≈ 12 min)" in result.stdout
    assert "one send every 5.00 s" in result.stdout  # max(2 s, U(2 s, 8 s)) has mean 5 s


def test_plan_sms_segments(project: Project) -> None:
    result = runner.invoke(
        app,
        [
            "plan",
            str(REPO / "campaigns" / "sms_aviso.toml"),
            "--json",
            "--start",
            "2025-03-10T10:00:00-03:00",
        ],
    )
    report = json.loads(result.stdout)
    assert report["channel"] == "sms" and report["sms_segments"] >= report["steps"][0]["planned"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, "not found"),
        ({"data/r.csv": "nome;celular\nAna;11987654321\n"}, "no column 'telefone'"),
        ({"data/r.csv": ""}, "empty"),
        ({"data/r.csv": "nome;telefone\nA;11987654321;x\n"}, "ragged row"),
        ({"templates/t.j2": "{{ nome }"}, "t.j2:1"),
        ({"templates/t.j2": "{{ nome.__class__ }}"}, "sandbox violation"),
    ],
)
def test_bad_input_is_reported_without_traceback(
    project: Project, files: dict[str, str], expected: str
) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "t.j2"\n')
    if "templates/t.j2" not in files:
        project.write("templates/t.j2", "{{ nome }}")
    if not files:
        path.unlink()
    for name, text in files.items():
        project.write(name, text)
    for command in ("validate", "preview", "plan"):  # the console script, in this process
        done = campaign(command, str(path))
        output = done.stdout + done.stderr
        assert done.returncode == 1, (command, output)
        assert "Traceback" not in output
        assert expected in output, (command, output)


def test_plan_limits_come_from_the_service_when_configured(
    project: Project, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox(daily_message_limit=40)
    box.create_session("s1")
    box.create_session("s2")
    monkeypatch.setenv("CAMPAIGN_BASE_URL", box.base_url)
    monkeypatch.setenv("CAMPAIGN_API_KEY", box.api_key)
    path = _paced(project)
    result = runner.invoke(app, ["plan", str(path), "--start", "2025-03-07T09:00", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["limits_source"] == "service"
    assert [s["plan_limit"] for s in report["senders"]] == [40, 40]


def test_plan_falls_back_to_the_file_when_the_service_fails(
    project: Project, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox()
    monkeypatch.setenv("CAMPAIGN_BASE_URL", box.base_url)
    monkeypatch.setenv("CAMPAIGN_API_KEY", "wrong-key")
    path = _paced(project, "plan_limit = 25\n")
    result = runner.invoke(app, ["plan", str(path), "--start", "2025-03-07T09:00", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["limits_source"] == "file"
