"""The campaigns page: each file under campaigns/ with what validate and plan say of it,
checked again when the file changes."""

from __future__ import annotations

import os
from pathlib import Path

from scheduler.commands.dashboard import check_campaign
from scheduler.ledger.runs import Ledger
from tests.dashboard.web_support import hooks, numbers, project_settings, served
from tests.factories import FakeClock, Project


def _article(html: str, name: str) -> str:
    start = html.index(f'data-file="{name}"')
    end = html.find("</article>", start)
    return html[start:end]


def test_each_campaign_file_shows_its_validation_and_plan(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    project = Project.empty(tmp_path)
    good = project.basic()  # campaigns/c.toml: 4 rows, 2 valid numbers, 1 invalid, 1 duplicate
    project.campaign('name = "quebrado"\nsenders = ["s1"]\n[recipients]\n'
                     'file = "data/none.csv"\nphone_column = "telefone"\n'
                     '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n', name="bad.toml")
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock, check=check_campaign) as web:
        html = web.get("/campaigns").text
        assert set(hooks(html, "data-file")) == {"c.toml", "bad.toml"}
        ok, bad = _article(html, "c.toml"), _article(html, "bad.toml")
        assert 'data-valid="true"' in ok and 'data-valid="false"' in bad
        assert numbers(ok) == {"valid": 2, "invalid": 1, "deliveries": 2}
        assert "data/none.csv" in bad  # the error names the missing file
        # the file changes: it is checked again (its cached check is not shown)
        good.write_text(good.read_text().replace('text = "Olá {{ nome }}"',
                                                 'text = "Olá {{ sobrenome }}"'))
        stat = good.stat()
        os.utime(good, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        again = _article(web.get("/campaigns").text, "c.toml")
    assert 'data-valid="false"' in again and "sobrenome" in again
