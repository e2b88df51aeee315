"""The Attempts sheet as a person sees it: opened by LibreOffice Calc (headless), printed to
PDF and saved as CSV: every column readable (no ``###``), the next due time shown as a
date in the campaign's zone, the sheet on one page, the Recipients' "Reached by" as text."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from scheduler.ledger.runs import Ledger
from scheduler.reports import write_report
from tests.reports.render import Rendered, render
from tests.views.support import build_family

#: LibreOffice's view of the Attempts sheet; on the PostgreSQL pass the sheet's figures and
#: "Reached by" read from PostgreSQL are checked by these tests.
pytestmark = pytest.mark.pg_covered_by(
    "tests/reports/test_attempts_sheet.py::test_the_attempts_sheet_says_the_funnel_per_attempt",
    "tests/reports/test_attempts_sheet.py::test_each_recipient_says_what_reached_them",
    reason="LibreOffice's rendering of a sheet whose PostgreSQL reads are checked there")

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?$")


def _rows(rendered: Rendered, sheet: str) -> list[list[str]]:
    with open(rendered.csv[sheet], encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def test_the_attempts_sheet_reads_in_libreoffice(ledger: Ledger, tmp_path: Path) -> None:
    family = build_family(ledger)
    report = write_report(ledger, [family.parent, family.fallback],
                          output=tmp_path / "attempts.xlsx")
    rendered = render(report.path, tmp_path / "rendered")
    pages = rendered.pages_of("Attempts")
    assert len(pages) == 1, pages
    assert "###" not in rendered.pages[pages[0]]
    rows = _rows(rendered, "Attempts")
    header = rows[0]
    by_attempt = {row[header.index("Attempt")]: row for row in rows[1:5]}
    assert list(by_attempt) == ["1st", "2nd", "3rd", "SMS fallback"]
    assert by_attempt["2nd"][header.index("Made by (rule: rows)")] == "no answer 3, busy 1"
    due = by_attempt["3rd"][header.index("Next due (America/Sao_Paulo)")]
    assert DATE_TIME.match(due) and due.startswith("2026-11-23 10:00")
    recipients = _rows(rendered, "Recipients")
    column = recipients[0].index("Reached by")
    assert {"voice, attempt 1", "voice, attempt 2", "SMS fallback", "not reached"} <= {
        row[column] for row in recipients[1:]}
