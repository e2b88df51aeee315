"""The report shows each conditional step's decision: a conversation run against the
sandbox (scripted replies per number), then ``campaign report`` as XLSX and CSV: each row
of a step that follows a reply says whether it went and why (the stored decision); the
first step's rows and a run without conditions say nothing of it."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from openpyxl import load_workbook

from tests.channels.support import run_env
from tests.conversation.support import CAMPAIGN_FILE, KINDS
from tests.incli import in_process
from tests.recycling.support import number, phone

#: Who answers what: "1" (confirms), "2 por favor" (reschedules), nothing, "quem é?".
PEOPLE = 4
HEADERS = ("Number", "Step", "State", "Condition", "Condition's reason")


def _project(root: Path) -> Path:
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    rows = ["nome;telefone"] + [f"P{i};{phone(i)}" for i in range(PEOPLE)]
    (root / "data" / "pessoas.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    path = root / "campaigns" / "conversa.toml"
    path.write_text(CAMPAIGN_FILE.replace('wait = "8s"', 'wait = "3s"')
                    .replace('not_replied_within = "3s"', 'not_replied_within = "1s"'),
                    encoding="utf-8")
    return path


def _by_row(header: list[Any], rows: list[list[Any]]) -> dict[tuple[str, int], tuple[Any, ...]]:
    at = [header.index(h) for h in HEADERS]
    return {(str(r[at[0]]), int(r[at[1]])): tuple(r[i] for i in at[2:]) for r in rows}


def test_the_report_says_each_conditional_steps_decision_and_why(
        make_sandbox: Any, tmp_path: Path, ledger_url: str) -> None:
    script = {number(i): KINDS[i][0] for i in range(PEOPLE)}
    service = make_sandbox(whatsapp_replies_by_number=script)
    service.create_session("s1")
    root = tmp_path / "shop"
    env = run_env(service.base_url, service.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="3",
                  CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="2")
    out = in_process(env, "run", str(_project(root)), cwd=root, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr

    made = in_process(env, "report", "1", cwd=root)
    assert made.returncode == 0, made.stderr
    sheet = load_workbook(next((root / "reports").glob("*.xlsx")))["Recipients"]
    table = [list(r) for r in sheet.iter_rows(values_only=True)]
    made = in_process(env, "report", "1", "--format", "csv", cwd=root)
    assert made.returncode == 0, made.stderr
    with next((root / "reports").glob("*.csv")).open(encoding="utf-8-sig") as fh:
        lines = list(csv.reader(fh))

    for header, rows in ((table[0], table[1:]), (lines[0], lines[1:])):
        got = _by_row(list(header), rows)
        assert len(got) == PEOPLE * 4
        blank = (None, "")
        confirmed, quiet = number(0), number(2)
        assert got[(confirmed, 0)][1] in blank and got[(confirmed, 0)][2] in blank
        assert got[(confirmed, 1)][1:] == (
            "went", "replied '1': reply_matches = \"^\\s*(1|sim)\"")
        assert got[(confirmed, 2)][1] == "not sent" and got[(confirmed, 2)][2]
        assert got[(confirmed, 3)][1] == "not sent"
        assert got[(confirmed, 3)][0] == "skipped"
        assert got[(number(1), 2)][1] == "went"
        assert got[(quiet, 1)][1:] == ("not sent", "no reply within 3 s")
        assert got[(quiet, 3)][1:] == ("went", "no reply within 1 s")
        assert got[(number(3), 1)][1] == "not sent" and got[(number(3), 2)][1] == "not sent"


def test_a_run_without_conditions_has_no_condition_columns(
        make_sandbox: Any, tmp_path: Path, ledger_url: str) -> None:
    service = make_sandbox()
    service.create_session("s1")
    root = tmp_path / "shop"
    path = _project(root)
    head, first = CAMPAIGN_FILE.split("[[steps]]")[:2]
    path.write_text(head.split("[replies]")[0] + "[[steps]]" + first, encoding="utf-8")
    env = run_env(service.base_url, service.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="1")
    out = in_process(env, "run", str(path), cwd=root, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    made = in_process(env, "report", "1", "--format", "csv", cwd=root)
    assert made.returncode == 0, made.stderr
    with next((root / "reports").glob("*.csv")).open(encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh))
    assert "Condition" not in header and "Condition's reason" not in header
