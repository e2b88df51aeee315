"""The run's reports to download from its page: a real workbook and a real CSV, written by
the reports package from the ledger."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from openpyxl import load_workbook

from scheduler.ledger.runs import Ledger
from tests.dashboard.web_support import hooks, project_settings, served
from tests.factories import FakeClock
from tests.reports.support import FORMULA, make_whatsapp_run


def test_the_run_page_offers_its_reports_as_xlsx_and_csv(
        ledger: Ledger, clock: FakeClock, ledger_url: str, tmp_path: Path) -> None:
    scenario = make_whatsapp_run(ledger, clock)
    run = scenario.run_id
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings, clock=clock) as web:
        page = web.get(f"/runs/{run}").text
        links = hooks(page, "id")
        assert {"download-xlsx", "download-csv"} <= set(links)
        book = web.get(f"/runs/{run}/report.xlsx")
        table = web.get(f"/runs/{run}/report.csv")
    assert book.status_code == 200 and book.headers["content-type"].startswith(
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    assert f'filename="promo-run-{run}.xlsx"' in book.headers["content-disposition"]
    assert book.headers["server-timing"].startswith("app;dur=")
    workbook = load_workbook(io.BytesIO(book.content), read_only=True)
    assert {"Summary", "Recipients"} <= set(workbook.sheetnames)
    recipients = list(workbook["Recipients"].iter_rows(values_only=True))
    assert len(recipients) == 1 + 20  # the header, then every delivery

    assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
    text = table.content.decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == 1 + 20
    states = [row[rows[0].index("State")] for row in rows[1:]]
    assert {state: states.count(state) for state in set(states)} == scenario.states
    names = [row[rows[0].index("nome")] for row in rows[1:]]
    assert names[2] == f"'{FORMULA}"  # a CSV value that is a formula stays text
    assert not list(tmp_path.glob("reports/*"))  # written to a temporary folder, not kept
