"""The workbook as xlsxwriter writes it: styles, Summary (with its charts), Errors, Sends per
hour, and the header, widths, frozen row and auto-filter of each row table.

The rows of the row tables (Recipients, Replies, Opt-outs) are streamed in afterwards by
:mod:`scheduler.reports.sheetxml`, with the style indices this module reports.
Text is always written with ``write_string`` (never parsed as a formula, number or URL);
text that begins like a formula also gets the quote-prefix style, so editing the cell in a
spreadsheet keeps it text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from scheduler.reports.columns import Column, Table
from scheduler.reports.output import formula_like
from scheduler.reports.sheetxml import MAX_CELL_CHARS, MAX_SHEET_ROWS
from scheduler.reports.summary import ERROR_COLUMNS, Summary
from scheduler.timeutil import utcnow

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
    "hour": {"num_format": "yyyy-mm-dd hh:00"},
    "user_text": {"num_format": "@", "quote_prefix": True},
    "int": {"num_format": "#,##0"},
    "number": {"num_format": "#,##0.0"},
    "money": {"num_format": "#,##0.00"},
    "percent": {"num_format": "0.0%"},
}  # fmt: skip
#: Cell kinds of streamed rows → format name (kinds not listed are written unstyled).
_STREAMED_STYLES = {"date": "date", "user_text": "user_text", "money": "money",
                    "percent": "percent", "number": "number"}  # fmt: skip


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
        if kind in ("text", "user_text"):
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

    def _list_sheet(self, name: str, columns: Sequence[Column], rows: int,
                    streamed: bool = False) -> Any:  # fmt: skip
        ws = self.book.add_worksheet(name)
        for col, column in enumerate(columns):
            fmt = _STREAMED_STYLES.get(column.kind) if streamed else None
            ws.set_column(col, col, column.width, self.formats[fmt] if fmt else None)
        self.header(ws, 0, columns)
        ws.set_row(0, 30)
        ws.freeze_panes(1, 0)
        ws.autofilter(0, 0, max(rows, 1), len(columns) - 1)
        return ws

    # ------------------------------------------------------------------ sheets

    def summary(self, summary: Summary) -> tuple[Any, dict[str, tuple[int, int]]]:
        """The Summary sheet; returns it, and the first and last row of each section."""
        ws = self.book.add_worksheet("Summary")
        runs = summary.runs
        total = len(runs) > 1
        values = len(runs) + (1 if total else 0)
        ws.set_column(0, 0, 38)
        ws.set_column(1, max(values, 12), 16)
        heads = ["Metric", *(f"Run {r.id}" for r in runs), *(["Total"] if total else [])]
        for col, head in enumerate(heads):
            ws.write_string(0, col, head, self.formats["header"])
        ws.freeze_panes(1, 1)
        row, sections = 0, {}
        for title, metrics in summary.sections:
            row += 1
            ws.write_string(row, 0, title, self.formats["section"])
            row += 1
            sections[title] = (row, row + len(metrics) - 1)
            for metric in metrics:
                self.put(ws, row, 0, metric.label, "user_text")  # reasons come from data
                kind = metric.kind
                for col, value in enumerate(metric.values, start=1):
                    self.put(ws, row, col, value, kind)
                if total:
                    self.put(ws, row, values, metric.total, kind)
                row += 1
        for title, (columns, frame) in (("By sender", summary.by_sender),
                                        ("By step", summary.by_step)):  # fmt: skip
            row += 1
            ws.write_string(row, 0, title, self.formats["section"])
            row += 1
            self.header(ws, row, columns)
            row += 1
            for record in frame.to_dict("records"):
                for col, column in enumerate(columns):
                    self.put(ws, row, col, record.get(column.key), column.kind)
                row += 1
        row += 1
        ws.write_string(row, 0, "Notes", self.formats["section"])
        notes = [*summary.notes,
                 "Times are local to each run's time zone (spreadsheets have no zones).",
                 f"Generated {utcnow():%Y-%m-%d %H:%M} UTC."]  # fmt: skip
        for offset, note in enumerate(notes, start=1):
            ws.write_string(row + offset, 0, note)
        return ws, sections

    def charts(self, ws: Any, summary: Summary, sections: dict[str, tuple[int, int]],
               hours: int) -> None:  # fmt: skip
        """The sends-per-hour and funnel charts, then one per channel section (SMS delivery
        by error code, voice outcomes, digits pressed), right of the Summary's figures."""
        funnel = sections["Funnel"]
        col = len(summary.runs) + (2 if len(summary.runs) > 1 else 1) + 1
        hourly = self.book.add_chart({"type": "column"})
        hourly.add_series({"name": "Sends", "categories": ["Sends per hour", 1, 0, hours, 0],
                           "values": ["Sends per hour", 1, 1, hours, 1],
                           "fill": {"color": "#2f6db5"}, "gap": 20})  # fmt: skip
        hourly.set_title({"name": "Sends per hour"})
        hourly.set_x_axis({"date_axis": True, "num_format": "dd/mm hh:00",
                           "num_font": {"rotation": -45}})  # fmt: skip
        hourly.set_legend({"none": True})
        hourly.set_size({"width": 720, "height": 320})
        ws.insert_chart(1, col, hourly)
        last = len(summary.runs) + (1 if len(summary.runs) > 1 else 0)
        bars = self.book.add_chart({"type": "bar"})
        bars.add_series(
            {
                "name": "Funnel",
                "categories": ["Summary", funnel[0], 0, funnel[1], 0],
                "values": ["Summary", funnel[0], last, funnel[1], last],
                "data_labels": {"value": True},
                "fill": {"color": "#2f6db5"},
            }
        )
        bars.set_title({"name": "Funnel"})
        bars.set_y_axis({"reverse": True})
        bars.set_legend({"none": True})
        bars.set_size({"width": 720, "height": 320})
        ws.insert_chart(18, col, bars)  # fmt: skip
        for index, title in enumerate(summary.chart_sections()):
            first, end = sections[title]
            chart = self.book.add_chart({"type": "bar"})
            chart.add_series({
                "name": title,
                "categories": ["Summary", first, 0, end, 0],
                "values": ["Summary", first, last, end, last],
                "data_labels": {"value": True},
                "fill": {"color": "#c0504d" if index == 0 else "#2f6db5"},
            })  # fmt: skip
            chart.set_title({"name": title})
            chart.set_y_axis({"reverse": True})
            chart.set_legend({"none": True})
            chart.set_size({"width": 720, "height": 320})
            ws.insert_chart(35 + 17 * index, col, chart)

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
        """The Sends per hour sheet (the chart's data); returns its last data row."""
        hour = f"Hour ({zone})"
        columns = [Column("hour", hour, "date", max(18, len(hour) + 2)),
                   Column("sends", "Sends", "int", 9)]  # fmt: skip
        ws = self._list_sheet("Sends per hour", columns, len(frame))
        for row, (hour, sends) in enumerate(zip(frame["hour"], frame["sends"], strict=True),
                                            start=1):  # fmt: skip
            ws.write_datetime(row, 0, hour.to_pydatetime(), self.formats["hour"])
            ws.write_number(row, 1, int(sends), self.formats["int"])
        return max(len(frame), 1)

    def close(self) -> dict[str, int]:
        """Write the file; returns the style index of each streamed cell kind."""
        self.book.close()
        return {kind: self.formats[name].xf_index or 0 for kind, name in _STREAMED_STYLES.items()
                if self.formats[name].xf_index is not None}  # fmt: skip
