"""The workbook as a person sees it: opened by LibreOffice Calc (headless), printed to PDF
and saved as CSV (as shown), from a demo-like run spread over ten hours.

Checks what the eye meets: no ``###`` anywhere, dates shown as dates (never serials), the
Summary on one page with its "How to read" note and the counts `plan` and `status` give,
both charts on pages of their own with titled axes and every hour with sends as a label,
and a report that prints in a few pages rather than dozens.
"""

from __future__ import annotations

import csv
import re
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from PIL import Image

from scheduler.ledger import access
from scheduler.ledger.db import open_ledger
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import ChangeSource, SenderStatus
from scheduler.reports import ReportResult, write_report
from tests.databases import LedgerUrls
from tests.factories import T0, FakeClock
from tests.reports.render import Rendered, render
from tests.reports.support import DEMO_HOURS, DEMO_PEOPLE, Scenario, make_demo_like_run

#: LibreOffice's view of the workbook is the same whichever database it was read from; on the
#: PostgreSQL pass its figures (totals, rows, senders' states) are checked by these tests.
pytestmark = pytest.mark.pg_covered_by(
    "tests/reports/test_workbook.py::test_summary_totals_match_the_ledger",
    "tests/reports/test_workbook.py::test_recipients_rows_match_the_ledger",
    "tests/reports/test_workbook.py::test_times_are_real_local_dates",
    "tests/senders/test_run_senders.py::test_status_and_the_report_say_a_paused_sender_and_why",
    reason="LibreOffice's rendering of a workbook whose PostgreSQL reads are checked there")

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?$")
SERIAL = re.compile(r"^\d{5}(\.\d+)?$")
HOURS = [f"2026-11-23 {9 + h:02d}:00" for h in range(DEMO_HOURS)]  # 12:00 UTC = 09:00 local
BLUE = (0x2F, 0x6D, 0xB5)
PAUSED_WHY = "opt-outs passed 3% of the day's sends"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, ledger_urls: LedgerUrls
          ) -> Iterator[tuple[Scenario, ReportResult, Rendered]]:  # fmt: skip
    """The demo-like run, its xlsx report, and LibreOffice's rendering of it (built once)."""
    folder = tmp_path_factory.mktemp("libreoffice")
    clock = FakeClock()
    engine = open_ledger(ledger_urls.new(folder, lasting=True))
    scenario = make_demo_like_run(Ledger(engine, clock=clock), clock)
    with access.transaction(engine) as conn:  # demo-02 paused three hours into the run
        spq.change_state(conn, "demo-02", SenderStatus.PAUSED, PAUSED_WHY,
                         ChangeSource.OPERATOR, T0 + timedelta(hours=3), score=41.5)
    report = write_report(engine, [scenario.run_id], output=folder / "out")
    engine.dispose()
    yield scenario, report, render(report.path, folder / "rendered")


@pytest.fixture(scope="module")
def rendered(built: tuple[Scenario, ReportResult, Rendered]) -> Rendered:
    """LibreOffice's rendering of the report."""
    return built[2]


def sheet_rows(rendered: Rendered, sheet: str) -> list[list[str]]:
    """A sheet as LibreOffice saved it to CSV (cells as shown)."""
    with open(rendered.csv[sheet], encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def summary_rows(rendered: Rendered) -> dict[str, list[str]]:
    """Summary label → the cells right of it (first occurrence of each label)."""
    out: dict[str, list[str]] = {}
    for row in sheet_rows(rendered, "Summary"):
        if row and row[0] and row[0] not in out:
            out[row[0]] = row[1:]
    return out


def test_no_cell_shows_hashes(rendered: Rendered) -> None:
    hashed = [i + 1 for i, text in enumerate(rendered.pages) if "###" in text]
    assert hashed == [], f"pages showing ### (a column too narrow): {hashed}"


def test_dates_are_shown_as_dates(rendered: Rendered) -> None:
    summary = summary_rows(rendered)
    for label in ("Planned at", "Started", "Finished"):
        assert DATE_TIME.match(summary[label][0]), (label, summary[label])
    hours = sheet_rows(rendered, "Sends per hour")
    assert [row[0] for row in hours[1:]] == HOURS
    recipients = sheet_rows(rendered, "Recipients")
    column = recipients[0].index("Dispatched (America/Sao_Paulo)")
    shown = [row[column] for row in recipients[1:] if row[column]]
    assert len(shown) == DEMO_PEOPLE * 2 - 8
    assert all(DATE_TIME.match(value) for value in shown), shown[:3]
    every = [cell for name in rendered.csv for row in sheet_rows(rendered, name) for cell in row]
    assert not [cell for cell in every if SERIAL.match(cell) and cell.startswith("46")]


def test_summary_on_one_page_with_the_shared_definitions(rendered: Rendered) -> None:
    assert rendered.pages_of("Summary") == [0]
    page = rendered.pages[0]
    assert "How to read" in page
    summary = summary_rows(rendered)
    sent = DEMO_PEOPLE * 2 - 8 - 3  # 4 people skipped at planning (2 steps), 3 failed
    assert summary["Planned"][0] == f"{DEMO_PEOPLE * 2 - 8}"  # rows to send, as `plan` says
    assert summary["Sent"][0] == f"{sent}"
    assert summary["Sent (% of planned)"][0] == f"{sent / (DEMO_PEOPLE * 2 - 8):.1%}"
    assert summary["invalid_number"][1:3] == ["2", "4"]  # run 1: people, then messages
    assert summary["duplicate"][1:3] == ["2", "4"]
    assert "(none yet)" not in page and "(no sender)" not in page


def test_both_charts_on_pages_of_their_own(rendered: Rendered, tmp_path: Path,
                                           built: tuple[Scenario, ReportResult, Rendered]
                                           ) -> None:  # fmt: skip
    pages = rendered.pages_of("Charts")
    assert len(pages) == 2
    hourly, funnel = (rendered.words(i) for i in pages)
    assert "Sends per hour" in hourly and "Hour (America/Sao_Paulo)" in hourly
    missing = [hour for hour in HOURS if hour not in hourly]
    assert missing == [], f"hours without a label on the chart: {missing}"
    assert "Funnel" in funnel and "Stage" in funnel and "Messages" in funnel
    assert all(stage in funnel for stage in ("Planned", "Sent", "Delivered", "Read", "Replied"))
    for index in pages:  # each page shows its bars
        with Image.open(rendered.png(index, tmp_path / f"page-{index}.png")) as image:
            colours = {colour for _n, colour in image.convert("RGB").getcolors(1 << 20) or []}
        assert any(all(abs(a - b) < 24 for a, b in zip(c, BLUE, strict=True))
                   for c in colours), f"no bar drawn on page {index + 1}"  # fmt: skip
    with zipfile.ZipFile(built[1].path) as archive:
        assert len([n for n in archive.namelist() if n.startswith("xl/charts/chart")]) == 2


def test_the_report_prints_in_a_few_pages(rendered: Rendered) -> None:
    every_sheet = ["Summary", "Charts", "Recipients", "Replies", "Opt-outs", "Errors",
                   "Senders", "Sends per hour"]  # fmt: skip
    counts = {sheet: len(rendered.pages_of(sheet)) for sheet in every_sheet}
    assert sum(counts.values()) == len(rendered.pages)  # every page says its sheet
    assert counts["Recipients"] <= 6, counts  # 232 rows, every column on one page wide
    assert counts["Senders"] == 1, counts
    assert len(rendered.pages) <= 14, counts


def test_the_senders_sheet_shows_states_and_changes(rendered: Rendered) -> None:
    rows = sheet_rows(rendered, "Senders")
    head = rows[0]
    assert head[:5] == ["Run", "Sender", "State now", "Since", "Reason"]
    table = rows[1:rows.index([""] * len(head))]
    by_sender = {row[1]: dict(zip(head, row, strict=True)) for row in table}
    paused = by_sender["demo-02"]
    assert (paused["State now"], paused["Since"], paused["Reason"], paused["Score"]) == (
        "paused", "2026-11-23 12:00:00", PAUSED_WHY, "41.5")  # 15:00 UTC, São Paulo's time
    assert (paused["Sent (this run)"], paused["Failed"], paused["Replies"]) == ("114", "2", "9")
    assert paused["State changes in the run"] == "2"  # made (warming), then paused
    assert by_sender["demo-01"]["State now"] == "no profile yet"
    changes = rows[rows.index(["State changes while the run lasted"] +
                              [""] * (len(head) - 1)) + 1:]
    assert changes[0][:8] == ["Run", "Sender", "To", "At", "Reason", "Score", "From", "By"]
    assert ["paused", "2026-11-23 12:00:00", PAUSED_WHY, "41.5", "warming", "a person"] in \
        [row[2:8] for row in changes[1:]]
    page = rendered.words(rendered.pages_of("Senders")[0])
    assert "demo-02" in page and "paused" in page and PAUSED_WHY in page
