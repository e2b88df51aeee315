"""``campaign validate`` as a user meets it: a broken campaign, every error in one run.

The campaign is run by its absolute path from another folder, in a subprocess of the real
command, and its ``--json`` report must list every problem at once, each with its file and
its line, row or field: wrong types in the TOML, a schedule already past, a ragged row and
an unclosed quote in the CSV, an undefined variable and a syntax error in template files,
a rendered caption over the service's bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories import Project

CAMPAIGN = [sys.executable, "-c", "from scheduler.cli import main; main()"]

BROKEN_TOML = """\
name = "quebrada"
senders = ["loja-01"]

[recipients]
file = "data/clientes.csv"
phone_column = "telefone"

[schedule]
at = 2020-01-06T09:00:00
timezone = "America/Sao_Paulo"

[pace]
rate = 30
daily_cap = "muitos"

[[steps]]
type = "text"
text_file = "ola.txt.j2"

[[steps]]
type = "text"
text_file = "quebrado.j2"

[[steps]]
type = "image"
image = "https://example.com/oferta.jpg"
caption = "{{ recado }}"
"""
LONG = "muito texto " * 100  # 1,200 characters: over the 1,024 of a caption
BROKEN_CSV = (
    "nome;telefone;recado\n"
    "Ana;11987654321;Oi\n"  # row 1, line 2
    f"Bia;21998765432;{LONG}\n"  # row 2, line 3: the caption is too long
    "Caio;11987654322;x;sobrou\n"  # row 3, line 4: a fourth field
    'Davi;"11987654323;y\n'  # row 4, line 5: the quote never closes
    "Eva;11987654324;Olá\n"  # row 5, line 6: read again after the bad quote
)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    return subprocess.run(
        [*CAMPAIGN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def broken(project: Project) -> Project:
    """A project whose campaign is wrong in every file."""
    project.write("data/clientes.csv", BROKEN_CSV)
    project.write(
        "templates/ola.txt.j2", "Olá {{ nome }}!\nSeu pedido chegou.\nCupom: {{ cupom }}\n"
    )
    project.write("templates/quebrado.j2", "Oi\n{{ nome }\n")
    project.campaign(BROKEN_TOML, name="quebrada.toml")
    return project


def _find(errors: list[dict[str, Any]], **expected: Any) -> dict[str, Any]:
    fragment = expected.pop("text")
    for error in errors:
        if fragment in error["message"] and all(error[k] == v for k, v in expected.items()):
            return error
    raise AssertionError(f"no error with {fragment!r} and {expected} in {errors}")


def test_a_broken_campaign_lists_every_error_at_once(broken: Project, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    campaign = (broken.root / "campaigns" / "quebrada.toml").resolve()
    done = _run(["validate", str(campaign), "--json"], elsewhere)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    report = json.loads(done.stdout)
    errors = report["errors"]
    toml, csv = str(campaign), str((broken.root / "data" / "clientes.csv").resolve())
    templates = broken.root / "templates"

    rate = _find(errors, file=toml, key="pace.rate", line=13, text='rate = "30/min"')
    assert "the number 30" in rate["message"]
    _find(errors, file=toml, key="pace.daily_cap", line=14, text="whole number")
    _find(errors, file=toml, key="schedule.at", line=9, text="in the past")
    _find(errors, file=csv, row=3, line=4, text="ragged row: 4 fields, the header has 3")
    quote = _find(errors, file=csv, row=4, line=5, text="unclosed quote")
    assert "closing" in quote["message"] and "EOF" not in quote["message"]
    undefined = _find(
        errors, file=str(templates / "ola.txt.j2"), line=3, key="steps[0].text", text="cupom"
    )
    assert undefined["row"] == 1 and "nome, recado, to" in undefined["message"]
    _find(errors, file=str(templates / "quebrado.j2"), line=2, key="steps[1].text", text="syntax")
    _find(errors, file=toml, key="steps[2].caption", row=2, line=27, text="over the limit of 1,024")
    assert len(errors) == 8, errors  # nothing repeated row after row
    assert report["recipients"]["read"] == 3  # Ana, Bia and Eva; rows 3 and 4 are malformed
    assert not any("C error" in e["message"] or "tokenizing" in e["message"] for e in errors)


def test_the_human_report_names_fields_and_lines(broken: Project, tmp_path: Path) -> None:
    campaign = (broken.root / "campaigns" / "quebrada.toml").resolve()
    done = _run(["validate", str(campaign)], tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in output
    assert f"{campaign}:13 [pace.rate]: expected text in quotes" in output
    assert "row 4: unclosed quote" in output and "8 error(s)" in output


def test_a_valid_campaign_from_another_folder(project: Project, tmp_path: Path) -> None:
    path = project.basic(csv="nome;telefone\nAna;11987654321\n").resolve()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _run(["validate", str(path), "--json"], elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["errors"] == []
