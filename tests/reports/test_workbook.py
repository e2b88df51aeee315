"""The xlsx report of a real ledger, read back with openpyxl: sheets, totals, formats, charts."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from xml.etree import ElementTree as ET

import openpyxl
import pytest
from PIL import Image

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.reports import ReportResult, write_report
from tests.databases import LedgerUrls
from tests.factories import FakeClock
from tests.reports.support import FORMULA, REPLY, Scenario, make_whatsapp_run

SHEETS = ["Summary", "Charts", "Recipients", "Replies", "Opt-outs", "Errors", "Senders",
          "Sends per hour"]
#: The row tables: a header row, frozen and filtered (Senders filters its first table only:
#: the state changes follow it, tests/senders/test_run_senders.py)
LISTS = [name for name in SHEETS[2:] if name != "Senders"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, ledger_urls: LedgerUrls
          ) -> Iterator[tuple[Scenario, ReportResult]]:  # fmt: skip
    """The main scenario and its xlsx report, built once for this module (tests only read)."""
    folder = tmp_path_factory.mktemp("workbook")
    clock = FakeClock()
    engine = open_ledger(ledger_urls.new(folder, lasting=True))
    scenario = make_whatsapp_run(Ledger(engine, clock=clock), clock)
    yield scenario, write_report(engine, [scenario.run_id], output=folder / "out")
    engine.dispose()


@pytest.fixture(scope="module")
def whatsapp_run(built: tuple[Scenario, ReportResult]) -> Scenario:
    """The scenario of :func:`built`."""
    return built[0]


@pytest.fixture(scope="module")
def report(built: tuple[Scenario, ReportResult]) -> ReportResult:
    """The report of :func:`built`."""
    return built[1]


@pytest.fixture(scope="module")
def book(report: ReportResult) -> Any:
    """The workbook, opened by openpyxl."""
    return openpyxl.load_workbook(report.path)


def table(ws: Any) -> list[dict[str, Any]]:
    """A list sheet's rows as dicts keyed by header."""
    rows = list(ws.iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def summary_values(ws: Any) -> dict[str, list[Any]]:
    """Summary label → values of its row (the first occurrence of each label)."""
    out: dict[str, list[Any]] = {}
    for row in ws.iter_rows(values_only=True):
        if row[0] is not None and row[0] not in out:
            out[row[0]] = list(row[1:])
    return out


def test_files_and_sheets(report: ReportResult, book: Any, whatsapp_run: Scenario) -> None:
    stem = f"promo-run-{whatsapp_run.run_id}"
    assert report.path.name == f"{stem}.xlsx"
    assert [p.name for p in report.charts] == [f"{stem}-sends-per-hour.png", f"{stem}-funnel.png"]
    assert all(p.is_file() for p in report.paths)
    assert sorted(p.name for p in report.path.parent.iterdir()) == sorted(
        p.name for p in report.paths
    )  # no temporary file left behind
    assert book.sheetnames == SHEETS
    assert report.rows == {"Recipients": 20, "Replies": 3, "Opt-outs": 2, "Errors": 2,
                           "Senders": len(whatsapp_run.ledger.options(
                               whatsapp_run.ledger.get_run(whatsapp_run.run_id)).senders)}


def test_summary_totals_match_the_ledger(book: Any, whatsapp_run: Scenario) -> None:
    counts = whatsapp_run.ledger.counts(whatsapp_run.run_id)
    assert counts == whatsapp_run.states
    values = summary_values(book["Summary"])
    for state, n in counts.items():
        assert values[state][0] == n, state
    assert values["Total"][0] == sum(counts.values()) == 20
    for stage, n in whatsapp_run.funnel.items():
        assert values[stage][0] == n, stage
    # planned: the rows to send (3 skipped at planning are not); rates of planned, then of sent
    assert values["Sent (% of planned)"][0] == pytest.approx(14 / 17)
    assert values["Delivered (% of sent)"][0] == pytest.approx(10 / 14)
    assert values["Read (% of sent)"][0] == pytest.approx(6 / 14)
    assert values["Replied (% of sent)"][0] == pytest.approx(3 / 14)
    assert values["Opted out since the run was planned"][0] == 1
    assert values["Already opted out when planned"][0] == 1
    for reason in ("duplicate", "invalid_number", "suppressed"):  # run, people, messages
        assert values[reason][:3] == [whatsapp_run.run_id, 1, 1], reason
    assert "How to read" in values
    assert values["Campaign"][0] == "promo" and values["Channel"][0] == "whatsapp"
    assert values["Time zone (times are local to it)"][0] == "America/Sao_Paulo"
    assert values["Started"][0] == datetime(2026, 11, 23, 9, 0)  # T0 in São Paulo
    assert values["Finished"][0] == datetime(2026, 11, 23, 12, 0)


def test_summary_per_sender_and_per_step(book: Any) -> None:
    rows = list(book["Summary"].iter_rows(values_only=True))
    start = next(i for i, r in enumerate(rows) if r[0] == "By sender")
    header = rows[start + 1]
    senders = {r[1]: dict(zip(header, r, strict=True)) for r in rows[start + 2 : start + 5]}
    assert set(senders) == {"s1", "s2", "(not sent yet)"}  # no row for the 3 skipped rows
    assert rows[start + 5][0] is None
    assert senders["s1"]["Planned"] == senders["s2"]["Planned"] == 8
    assert senders["s1"]["Sent"] + senders["s2"]["Sent"] == 14
    assert senders["s1"]["Failed"] == 1 and senders["s2"]["Unknown"] == 1
    assert senders["(not sent yet)"]["Planned"] == 1 and senders["(not sent yet)"]["Sent"] == 0
    step = rows.index(next(r for r in rows if r[0] == "By step"))
    record = dict(zip(rows[step + 1], rows[step + 2], strict=True))
    assert (record["Step"], record["Kind"], record["Planned"], record["Read"],
            record["Skipped"]) == (0, "text", 17, 6, 3)  # fmt: skip


def test_recipients_rows_match_the_ledger(book: Any, whatsapp_run: Scenario) -> None:
    rows = table(book["Recipients"])
    assert len(rows) == 20
    by_state: dict[str, int] = {}
    for row in rows:
        by_state[row["State"]] = by_state.get(row["State"], 0) + 1
    assert by_state == whatsapp_run.states
    assert [r["Number"] for r in rows] == whatsapp_run.numbers
    first = rows[0]
    assert first["Run"] == whatsapp_run.run_id and first["Row"] == 1 and first["Step"] == 0
    assert first["nome"] == "Cliente 0" and first["cidade"] == "São Paulo"
    assert first["messageId"] == "MSG-000" and first["Sender"] == "s1"
    assert first["Attempts"] == 1 and isinstance(first["Attempts"], int)
    assert first["Reply text"] == REPLY
    assert rows[5]["nome"] == "José Conceição"
    assert rows[1]["Reply text"] == "Obrigado! 😀"
    assert rows[14]["Last error"] == "400: number is not on WhatsApp"
    assert rows[15]["State"] == "unknown" and rows[15]["Reason"] == "no messages.sent after a crash"
    assert rows[17]["Number"] == "1234" and rows[17]["Reason"] == "invalid_number: too short"


def test_times_are_real_local_dates(book: Any) -> None:
    ws = book["Recipients"]
    headers = [c.value for c in ws[1]]
    column = headers.index("Dispatched (America/Sao_Paulo)") + 1
    cell = ws.cell(row=2, column=column)
    assert cell.is_date and isinstance(cell.value, datetime)
    assert cell.value == datetime(2026, 11, 23, 9, 0)  # 12:00 UTC in São Paulo (UTC-3)
    assert "yyyy" in cell.number_format
    read = ws.cell(row=2, column=headers.index("Read (America/Sao_Paulo)") + 1)
    assert read.value == datetime(2026, 11, 23, 9, 3, 5)
    assert ws.cell(row=18, column=column).value is None  # row 16: still planned
    hour = book["Sends per hour"]["A2"]
    assert hour.is_date and hour.value == datetime(2026, 11, 23, 9, 0)
    assert [r[1] for r in book["Sends per hour"].iter_rows(min_row=2, values_only=True)] == [
        6,
        6,
        4,
    ]


def test_formula_like_text_stays_text(book: Any, report: ReportResult) -> None:
    recipients = book["Recipients"]
    nome = [c.value for c in recipients[1]].index("nome") + 1
    cell = recipients.cell(row=4, column=nome)  # CSV row 3 (index 2)
    assert cell.value == FORMULA and cell.data_type == "s" and cell.quotePrefix
    replies = book["Replies"]
    text = [c.value for c in replies[1]].index("Text") + 1
    reply = replies.cell(row=2, column=text)
    assert reply.value == REPLY and reply.data_type == "s" and reply.quotePrefix
    assert all(c.data_type != "f" for ws in book.worksheets for row in ws.iter_rows()
               for c in row)  # fmt: skip
    with zipfile.ZipFile(report.path) as archive:
        for name in archive.namelist():
            if name.startswith("xl/worksheets/sheet"):
                assert b"<f>" not in archive.read(name), name


def test_every_part_is_well_formed_xml(report: ReportResult) -> None:
    with zipfile.ZipFile(report.path) as archive:
        assert archive.testzip() is None
        for name in archive.namelist():
            if name.endswith((".xml", ".rels")):
                ET.fromstring(archive.read(name))


def test_headers_frozen_filtered_and_readable(book: Any) -> None:
    assert book["Summary"].freeze_panes == "B2"
    for name in LISTS:
        ws = book[name]
        assert ws.freeze_panes == "A2", name
        assert (
            ws.auto_filter.ref == f"A1:{ws.cell(1, ws.max_column).column_letter}"
            f"{max(ws.max_row, 2)}"
        ), name
    recipients = book["Recipients"]
    widths = {c: recipients.column_dimensions[c].width for c in ("A", "C", "O")}
    assert widths["C"] >= 15 and widths["O"] >= 19  # number, first time column
    assert recipients["A1"].font.b


def test_charts_inside_the_workbook(book: Any, report: ReportResult) -> None:
    assert book["Summary"]._charts == []
    charts = book["Charts"]._charts
    assert sorted(type(c).__name__ for c in charts) == ["BarChart", "BarChart"]  # column + bar
    assert {c.type for c in charts} == {"col", "bar"}
    with zipfile.ZipFile(report.path) as archive:
        parts = [n for n in archive.namelist() if n.startswith("xl/charts/chart")]
        assert len(parts) == 2
        xml = b"".join(archive.read(n) for n in parts)
    assert b"'Sends per hour'!$B$2:$B$4" in xml
    assert b"Summary!$B$" in xml  # the funnel's counts


def test_pngs_are_real_images(report: ReportResult) -> None:
    for path in report.charts:
        assert path.stat().st_size > 10_000
        with Image.open(path) as image:
            assert image.format == "PNG"
            assert image.size[0] >= 800 and image.size[1] >= 400
            image.verify()
        with Image.open(path) as image:  # verify() leaves the image unusable
            colours = image.convert("RGB").getcolors(maxcolors=1_000_000) or []
            assert len(colours) > 10  # something was drawn


def test_replies_and_opt_outs(book: Any) -> None:
    replies = table(book["Replies"])
    assert [r["Text"] for r in replies] == [REPLY, "Obrigado! 😀", "SAIR"]
    assert [r["Opt-out"] for r in replies] == ["no", "no", "yes"]
    assert replies[0]["nome"] == "Cliente 0"
    assert replies[0]["Received (America/Sao_Paulo)"] == datetime(2026, 11, 23, 9, 30)
    optouts = {r["Number"]: r for r in table(book["Opt-outs"])}
    assert set(optouts) == {"5511900000019", "5511900000003"}
    assert optouts["5511900000019"]["Before this run"] == "yes"
    assert optouts["5511900000003"]["Before this run"] == "no"
    assert optouts["5511900000003"]["Message"] == "SAIR"


def test_errors_grouped_by_message(book: Any) -> None:
    errors = table(book["Errors"])
    assert [(e["State"], e["Message"], e["Count"]) for e in errors] == [
        ("failed", "400: number is not on WhatsApp", 1),
        ("unknown", "no messages.sent after a crash", 1),
    ]
    assert errors[0]["Share of the run"] == pytest.approx(0.05)
    assert errors[0]["First"] == datetime(2026, 11, 23, 11, 20, 1)


def test_every_sheet_prints_one_page_wide_with_its_header(book: Any) -> None:
    for name in SHEETS:
        ws = book[name]
        assert ws.page_setup.paperSize == 9, name  # A4
        if name == "Charts":  # 100 %, a page break after each chart
            assert ws.page_setup.orientation == "landscape"
            assert [b.id for b in ws.row_breaks.brk] == [32]
            continue
        assert ws.sheet_properties.pageSetUpPr.fitToPage, name
        assert (ws.page_setup.fitToWidth or 1) == 1, name  # 1 is OOXML's default
        assert ws.page_setup.fitToHeight == (None if name == "Summary" else 0), name
        assert ws.print_title_rows == "$1:$1", name
    assert book["Recipients"].page_setup.orientation == "landscape"  # 30 columns
    assert book["Errors"].page_setup.orientation == "landscape"


def test_widths_and_header_heights_follow_the_content(book: Any) -> None:
    summary = book["Summary"]
    assert summary.column_dimensions["B"].width >= 21  # "2026-11-23 09:00:00" never ###
    assert summary.column_dimensions["A"].width >= len("Opted out since the run was planned")
    rows = list(summary.iter_rows(values_only=True))
    header = next(i for i, r in enumerate(rows) if r[0] == "By sender") + 2  # 1-based row
    assert summary.row_dimensions[header].height >= 30  # "Delivered (% of sent)" wraps once
    assert book["Sends per hour"]["A2"].number_format == "yyyy-mm-dd hh:mm"
    optouts = book["Opt-outs"]
    reason = [c.value for c in optouts[1]].index("Reason")
    longest = max(len(str(r[reason] or "")) for r in optouts.iter_rows(values_only=True))
    assert optouts.column_dimensions["E"].width >= longest and reason == 4
    recipients = book["Recipients"]
    headers = [c.value for c in recipients[1]]
    letter = recipients.cell(1, headers.index("Reason") + 1).column_letter
    assert recipients.column_dimensions[letter].width >= len("no messages.sent after a crash")


def test_hourly_chart_on_hour_labels_with_titled_axes(report: ReportResult) -> None:
    with zipfile.ZipFile(report.path) as archive:
        charts = sorted(n for n in archive.namelist() if n.startswith("xl/charts/chart"))
        hourly, funnel = (archive.read(n).decode() for n in charts)
    assert "<c:catAx>" in hourly and "<c:dateAx>" not in hourly
    assert "'Sends per hour'!$C$2:$C$4" in hourly  # the text labels of each hour
    assert "Hour (America/Sao_Paulo)" in hourly and ">Sends<" in hourly
    assert ">Stage<" in funnel and ">Messages<" in funnel
