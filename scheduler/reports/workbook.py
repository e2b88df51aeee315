"""The workbook as xlsxwriter writes it: styles, Summary, Charts, Errors, Sends per hour,
and the header, widths, frozen row, auto-filter and page setup of each row table.

The rows of the row tables (Recipients, Replies, Opt-outs) are streamed in afterwards by
:mod:`scheduler.reports.sheetxml`, with the style indices this module reports.
Text is always written with ``write_string`` (never parsed as a formula, number or URL);
text that begins like a formula also gets the quote-prefix style, so editing the cell in a
spreadsheet keeps it text. Widths come from the content and every sheet has a page setup
(:mod:`scheduler.reports.layout`); the charts are drawn by :mod:`scheduler.reports.xlsxcharts`.
Date formats are ones Excel and LibreOffice both read (no ``hh:00``: LibreOffice shows
the raw serial number for it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from scheduler.core.timeutil import utcnow
from scheduler.reports import layout
from scheduler.reports.columns import Column, Table
from scheduler.reports.output import formula_like
from scheduler.reports.sheetxml import MAX_CELL_CHARS, MAX_SHEET_ROWS
from scheduler.reports.summary import ERROR_COLUMNS, SKIP_COLUMNS, Summary
from scheduler.reports.xlsxcharts import add_charts

OPTIONS = {"strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False,
           "nan_inf_to_errors": False}  # fmt: skip
DATE_FORMAT = "yyyy-mm-dd hh:mm:ss"
_FORMATS: dict[str, dict[str, Any]] = {
    "header": {"bold": True, "bg_color": "#dde7f3", "bottom": 1, "text_wrap": True,
               "valign": "top"},
    "header_text": {"bold": True, "bg_color": "#dde7f3", "bottom": 1, "text_wrap": True,
                    "valign": "top", "quote_prefix": True},
    "section": {"bold": True, "font_size": 12, "font_color": "#1f4e79"},
    "title": {"bold": True, "font_size": 14},
    "date": {"num_format": DATE_FORMAT},
    "hour": {"num_format": "yyyy-mm-dd hh:mm"},
    "key": {"num_format": "0", "align": "left"},
    "note": {"italic": True, "font_color": "#404040"},
    "user_text": {"num_format": "@", "quote_prefix": True},
    "int": {"num_format": "#,##0"},
    "number": {"num_format": "#,##0.0"},
    "money": {"num_format": "#,##0.00"},
    "percent": {"num_format": "0.0%"},
}  # fmt: skip
#: Cell kinds of streamed rows → format name (kinds not listed are written unstyled).
_STREAMED_STYLES = {"date": "date", "user_text": "user_text", "money": "money",
                    "percent": "percent", "number": "number"}  # fmt: skip


def _capped(kind: str) -> str:
    """Summary values in columns of their own: long text may run into the empty cells to
    its right, so it does not widen the column (see ``layout.shown_length``)."""
    return "capped_text" if kind in ("text", "user_text") else kind


@dataclass
class Part:
    """One sheet of a row table: the sheet's name and how many of the table's rows it holds."""

    sheet: str
    table: Table
    rows: int


class WorkbookWriter:
    """Writes everything but the streamed rows into ``path``; :meth:`close` returns styles."""

    def __init__(self, path: Path) -> None:
        import xlsxwriter

        self.book = xlsxwriter.Workbook(str(path), OPTIONS)
        self.book.set_properties({"title": "Campaign report", "comments": "campaign report"})
        self.formats = {name: self.book.add_format(props) for name, props in _FORMATS.items()}

    # ------------------------------------------------------------------ cells

    def put(self, ws: Any, row: int, col: int, value: Any, kind: str) -> None:
        """Write one value as its kind (text always as text, dates as dates)."""
        if value is None or value is pd.NaT or (isinstance(value, float) and not
                                                 math.isfinite(value)):  # fmt: skip
            return
        if kind in ("text", "user_text", "capped_text"):
            text = str(value)[:MAX_CELL_CHARS]
            ws.write_string(row, col, text, self.formats["user_text"]
                            if formula_like(text) else None)  # fmt: skip
        elif kind == "date":
            if isinstance(value, datetime):
                ws.write_datetime(row, col, value, self.formats["date"])
        else:
            ws.write_number(row, col, float(value), self.formats.get(kind))

    def header(self, ws: Any, row: int, columns: Sequence[Column]) -> None:
        """A header row; a header that begins like a formula stays text."""
        for col, column in enumerate(columns):
            style = "header_text" if formula_like(column.header) else "header"
            ws.write_string(row, col, column.header, self.formats[style])

    def new_sheet(self, name: str, widths: Sequence[float]) -> Any:
        """A sheet named ``name`` whose columns are ``widths`` wide."""
        ws = self.book.add_worksheet(name)
        for col, width in enumerate(widths):
            ws.set_column(col, col, width)
        return ws

    def records(self, ws: Any, row: int, columns: Sequence[Column],
                records: Sequence[dict[str, Any]], widths: Sequence[float]) -> int:
        """A header at ``row`` (as tall as its wrapped headers) and ``records`` (keyed like
        ``columns``) under it; returns the next free row."""
        self.header(ws, row, columns)
        ws.set_row(row, layout.header_height([c.header for c in columns], widths))
        for record in records:
            row += 1
            for col, column in enumerate(columns):
                self.put(ws, row, col, record.get(column.key), column.kind)
        return row + 1

    def _list_sheet(self, name: str, columns: Sequence[Column], rows: int,
                    streamed: bool = False) -> Any:  # fmt: skip
        ws = self.book.add_worksheet(name)
        widths = [max(column.width, layout.width_for([], column.header, cap=column.width),
                      layout.DATE_WIDTH if column.kind == "date" else 0.0)
                  for column in columns]  # fmt: skip
        for col, (column, width) in enumerate(zip(columns, widths, strict=True)):
            fmt = _STREAMED_STYLES.get(column.kind) if streamed else None
            ws.set_column(col, col, width, self.formats[fmt] if fmt else None)
        self.header(ws, 0, columns)
        ws.set_row(0, layout.header_height([c.header for c in columns], widths))
        ws.freeze_panes(1, 0)
        ws.autofilter(0, 0, max(rows, 1), len(columns) - 1)
        layout.page_setup(ws, widths)
        return ws

    # ------------------------------------------------------------------ sheets

    def summary(self, summary: Summary) -> tuple[Any, dict[str, tuple[int, int]]]:
        """The Summary sheet (and the empty Charts sheet after it); returns the Summary and
        the first and last row of each section."""
        ws = self.book.add_worksheet("Summary")
        self.chart_sheet = self.book.add_worksheet("Charts")
        cells = _Cells(self, ws)
        row, sections = self._summary_metrics(cells, summary)
        row, header_rows = self._summary_tables(cells, summary, row)
        widths = cells.widths()
        for col, width in enumerate(widths):
            ws.set_column(col, col, width)
        for header_row, headers in header_rows:
            ws.set_row(header_row, layout.header_height(headers, widths))
        self._summary_notes(ws, summary, row + 1, widths)
        return ws, sections

    @staticmethod
    def _summary_metrics(cells: _Cells, summary: Summary,
                         ) -> tuple[int, dict[str, tuple[int, int]]]:
        """The header row and the metric sections, a column per run (and a total of several
        runs); returns the next row and the first and last row of each section."""
        runs = summary.runs
        total = len(runs) > 1
        values = len(runs) + (1 if total else 0)
        for col, head in enumerate(["Metric", *(f"Run {r.id}" for r in runs),
                                    *(["Total"] if total else [])]):  # fmt: skip
            cells.put(0, col, head, "text", "header")
        row, sections = 0, {}
        for title, metrics in summary.sections:
            row += 1
            cells.put(row, 0, title, "text", "section")
            row += 1
            sections[title] = (row, row + len(metrics) - 1)
            for metric in metrics:
                cells.put(row, 0, metric.label, "user_text")  # reasons come from data
                for col, value in enumerate(metric.values, start=1):
                    cells.put(row, col, value, _capped(metric.kind))
                if total:
                    cells.put(row, values, metric.total, _capped(metric.kind))
                row += 1
        return row, sections

    def _summary_tables(self, cells: _Cells, summary: Summary, row: int,
                        ) -> tuple[int, list[tuple[int, list[str]]]]:
        """The Summary's tables from ``row`` on (see :meth:`_tables`); returns the next row
        and each table's header row with its headers."""
        header_rows = []
        for title, (columns, frame) in self._tables(summary):
            row += 1
            cells.put(row, 0, title, "text", "section")
            row += 1
            cells.header(row, columns)
            header_rows.append((row, [c.header for c in columns]))
            row += 1
            for record in frame.to_dict("records"):
                for col, column in enumerate(columns):
                    kind = "key" if column.key == "run_id" else column.kind
                    cells.put(row, col, record.get(column.key), kind)
                row += 1
        return row, header_rows

    def _summary_notes(self, ws: Any, summary: Summary, row: int,
                       widths: Sequence[float]) -> None:
        """"How to read" at ``row``, the frozen first row and column, and the page setup."""
        ws.write_string(row, 0, "How to read", self.formats["section"])
        notes = [*summary.notes,
                 "Times are local to each run's time zone (spreadsheets have no zones).",
                 f"Generated {utcnow():%Y-%m-%d %H:%M} UTC."]  # fmt: skip
        for offset, note in enumerate(notes, start=1):
            ws.write_string(row + offset, 0, note, self.formats["note"])
        ws.freeze_panes(1, 1)
        layout.page_setup(ws, widths, one_page=row + len(notes) <= layout.ONE_PAGE_ROWS)

    @staticmethod
    def _tables(summary: Summary) -> list[tuple[str, tuple[list[Column], pd.DataFrame]]]:
        """The Summary's tables: skip reasons (when any), per sender, per step."""
        tables = [("By sender", summary.by_sender), ("By step", summary.by_step)]
        if len(summary.skipped):
            tables.insert(0, ("Skipped, by reason", (SKIP_COLUMNS, summary.skipped)))
        return tables

    def charts(self, summary: Summary, sections: dict[str, tuple[int, int]], hours: int,
               zone: str) -> None:  # fmt: skip
        """The Charts sheet: sends per hour, the funnel, then one chart per channel section
        (SMS delivery by error code, voice outcomes, digits pressed), a page each."""
        add_charts(self.book, self.chart_sheet, summary, sections, hours, zone)

    def row_table(self, table: Table) -> list[Part]:
        """Sheets for a row table (one per 1,048,575 rows): header, widths, filter, freeze."""
        parts, left, index = [], table.rows, 1
        while True:
            rows = min(left, MAX_SHEET_ROWS)
            name = table.name if index == 1 else f"{table.name} {index}"
            self._list_sheet(name, table.columns, rows, streamed=True)
            parts.append(Part(name, table, rows))
            left -= rows
            index += 1
            if left <= 0:
                return parts

    def errors(self, frame: pd.DataFrame) -> None:
        """The Errors sheet: one row per (run, state, message), most frequent first."""
        ws = self._list_sheet("Errors", ERROR_COLUMNS, len(frame))
        for row, record in enumerate(frame.to_dict("records"), start=1):
            for col, column in enumerate(ERROR_COLUMNS):
                self.put(ws, row, col, record.get(column.key), column.kind)

    def hourly(self, frame: pd.DataFrame, zone: str) -> int:
        """The Sends per hour sheet (the chart's data: each hour as a date and as the text
        label the chart's category axis shows); returns its last data row."""
        hour = f"Hour ({zone})"
        columns = [Column("hour", hour, "date", max(layout.DATE_WIDTH, len(hour) + 2)),
                   Column("sends", "Sends", "int", 9),
                   Column("label", "Label (chart)", "text", 18)]  # fmt: skip
        ws = self._list_sheet("Sends per hour", columns, len(frame))
        for row, (hour, sends) in enumerate(zip(frame["hour"], frame["sends"], strict=True),
                                            start=1):  # fmt: skip
            moment = hour.to_pydatetime()
            ws.write_datetime(row, 0, moment, self.formats["hour"])
            ws.write_number(row, 1, int(sends), self.formats["int"])
            ws.write_string(row, 2, f"{moment:%Y-%m-%d %H:%M}")
        return max(len(frame), 1)

    def close(self) -> dict[str, int]:
        """Write the file; returns the style index of each streamed cell kind."""
        self.book.close()
        return {kind: self.formats[name].xf_index or 0 for kind, name in _STREAMED_STYLES.items()
                if self.formats[name].xf_index is not None}  # fmt: skip


class _Cells:
    """A sheet's cells as they are written, remembered by column for the column widths."""

    def __init__(self, writer: WorkbookWriter, ws: Any) -> None:
        self.writer, self.ws = writer, ws
        self.seen: dict[int, list[tuple[Any, str]]] = {}  # column → (value, kind): for widths
        self.heads: dict[int, list[str]] = {}  # column → table headers in it (they wrap)

    def put(self, row: int, col: int, value: Any, kind: str, style: str | None = None) -> None:
        """Write one value as its kind, or as text in the format ``style``."""
        self.seen.setdefault(col, []).append((value, kind))
        if style is not None:
            self.ws.write_string(row, col, str(value), self.writer.formats[style])
        else:
            self.writer.put(self.ws, row, col, value, kind)

    def header(self, row: int, columns: Sequence[Column]) -> None:
        """A table's header row (its headers wrap, and widen their columns so far)."""
        self.writer.header(self.ws, row, columns)
        for col, column in enumerate(columns):
            self.heads.setdefault(col, []).append(column.header)

    def widths(self) -> list[float]:
        """Each column's width: its widest value or header word."""
        return [max([layout.width_for(self.seen.get(col, []))] +
                    [layout.width_for([], h) for h in self.heads.get(col, [])])
                for col in range(max(self.seen) + 1)]  # fmt: skip
