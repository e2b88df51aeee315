"""The workbook's native charts, on a Charts sheet: one chart per printed page.

- **Sends per hour**: a column chart on a *category* axis of hour labels (text such as
  ``2026-11-23 14:00``, every hour with sends, in the campaign's time zone). A date axis
  has day resolution in LibreOffice (ten hours of sends collapse into two bars) and its
  number formats are not read alike by Excel and LibreOffice; text labels are.
- **Funnel**: the Summary's funnel counts, planned first.
- One chart per channel section (SMS delivery by error code, voice outcomes, digits).

Every axis has a title. Each chart fills a landscape A4 page at 100 % (the sheet is not
"fit to page": Excel ignores manual page breaks then) and a page break follows it, so no
chart is ever cut across two pages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.dispatch.channels import channel_unit
from scheduler.reports.channels import DIGITS, SMS_CODES, VOICE_OUTCOMES
from scheduler.reports.summary import Summary

#: A chart's size in pixels: the printable area of a landscape A4 page at 100 %, with the
#: margins of :func:`chart_page_setup` (10.9 × 7.0 inches at 96 pixels an inch), less a
#: margin for LibreOffice, whose columns come out a few percent wider than Excel's.
WIDTH, HEIGHT = 880, 560
#: The sheet's columns are set to this width in pixels: LibreOffice's default column is
#: wider than Excel's, and a chart is anchored to cells, so it would grow past the page.
COLUMN_PIXELS = 64
#: Rows per chart page (20 pixels each): the chart, and two empty rows before the break.
PAGE_ROWS = 32
#: Hour labels shown on the axis at most (beyond, every n-th hour is labelled); up to
#: FLAT_LABELS of them fit side by side, more are turned 45°.
MAX_LABELS, FLAT_LABELS = 48, 6
BLUE = "#2f6db5"
RED = "#c0504d"
_AXIS_TITLES = {SMS_CODES: ("Outcome or error code", "Messages"),
                VOICE_OUTCOMES: ("Outcome", "Calls"), DIGITS: ("Keys pressed", "Calls")}
_GRID = {"visible": True, "line": {"color": "#d9d9d9"}}


def chart_page_setup(ws: Any, charts: int) -> None:
    """Landscape A4 at 100 %, a page break after every chart, the sheet named in the footer."""
    ws.set_paper(9)
    ws.set_landscape()
    ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.6)
    ws.set_footer("&L&A · page &P", {"margin": 0.25})
    ws.set_h_pagebreaks([PAGE_ROWS * i for i in range(1, charts)])
    ws.hide_gridlines(2)
    ws.set_column_pixels(0, WIDTH // COLUMN_PIXELS + 1, COLUMN_PIXELS)


def _bar(book: Any, title: str, categories: list[Any], values: list[Any], axes: tuple[str, str],
         colour: str) -> Any:  # fmt: skip
    chart = book.add_chart({"type": "bar"})
    chart.add_series({"name": title, "categories": categories, "values": values,
                      "data_labels": {"value": True}, "fill": {"color": colour},
                      "gap": 60})  # fmt: skip
    chart.set_title({"name": title})
    chart.set_y_axis({"name": axes[0], "reverse": True})  # bar charts: y is the category axis
    chart.set_x_axis({"name": axes[1], "major_gridlines": _GRID, "min": 0})
    chart.set_legend({"none": True})
    chart.set_size({"width": WIDTH, "height": HEIGHT})
    return chart


def add_charts(book: Any, ws: Any, summary: Summary, sections: Mapping[str, tuple[int, int]],
               hours: int, zone: str) -> int:  # fmt: skip
    """Sends per hour, the funnel, then one chart per channel section, on ``ws`` (the Charts
    sheet); ``sections`` gives the Summary rows of each section. Returns the charts added."""
    hourly = book.add_chart({"type": "column"})
    hourly.add_series({"name": "Sends", "categories": ["Sends per hour", 1, 2, hours, 2],
                       "values": ["Sends per hour", 1, 1, hours, 1],
                       "fill": {"color": BLUE},
                       "gap": 30 if hours > FLAT_LABELS else 200})  # fmt: skip
    hourly.set_title({"name": "Sends per hour"})
    hourly.set_x_axis({"name": f"Hour ({zone})",
                       "num_font": {"rotation": -45 if hours > FLAT_LABELS else 0},
                       "interval_unit": max(1, -(-hours // MAX_LABELS))})  # fmt: skip
    hourly.set_y_axis({"name": "Sends", "major_gridlines": _GRID, "min": 0})
    hourly.set_legend({"none": True})
    hourly.set_size({"width": WIDTH, "height": HEIGHT})
    charts = [hourly]
    last = len(summary.runs) + (1 if len(summary.runs) > 1 else 0)  # the Total column
    unit = channel_unit(summary.channel).capitalize()
    first, end = sections["Funnel"]
    charts.append(_bar(book, "Funnel", ["Summary", first, 0, end, 0],
                       ["Summary", first, last, end, last], ("Stage", unit), BLUE))  # fmt: skip
    for index, title in enumerate(summary.chart_sections()):
        first, end = sections[title]
        charts.append(_bar(book, title, ["Summary", first, 0, end, 0],
                           ["Summary", first, last, end, last],
                           _AXIS_TITLES.get(title, ("Category", unit)),
                           RED if index == 0 else BLUE))  # fmt: skip
    for index, chart in enumerate(charts):
        ws.insert_chart(PAGE_ROWS * index, 0, chart, {"x_offset": 4, "y_offset": 4})
    chart_page_setup(ws, len(charts))
    return len(charts)
