"""How a sheet reads and prints: column widths from the content, header rows tall enough
for their wrapped text, and the page setup of every sheet (no I/O here).

Widths are in characters of the default font (Calibri 11 in Excel, Carlito or Liberation
Sans in LibreOffice); a date-time needs 19 (``2026-11-23 14:00:00``) plus a margin, so no
date ever shows as ``###``. Headers wrap at word boundaries: each header row is as tall as
its tallest header, so a wrapped header never covers the first row of data.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

#: Width of a date-time cell (``yyyy-mm-dd hh:mm:ss``) with a margin for bold or padding.
DATE_WIDTH = 21.0
#: Characters of a Summary text value that widen its column (the rest may overflow).
CAPPED_TEXT = 24
#: Widths never below / above these (a longer text is wrapped or cut at the cell's edge).
MIN_WIDTH, MAX_WIDTH = 6.0, 60.0
#: Height of one line of text in points (Calibri 11 / Liberation Sans 10).
LINE_POINTS = 15.0
#: Sheets wider than this many characters print in landscape.
PORTRAIT_CHARS = 100.0
#: A Summary up to this many rows prints on one page (a longer one, many runs or
#: senders, on as many pages as it needs, one page wide).
ONE_PAGE_ROWS = 90
A4 = 9


def shown_length(value: Any, kind: str) -> float:
    """Characters a value takes on screen, as the report formats it."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return 0.0
    if kind == "date" or isinstance(value, datetime):
        return DATE_WIDTH
    if kind == "percent":
        return 7.0
    if kind == "capped_text":
        return float(min(len(str(value)), CAPPED_TEXT))
    if kind in ("int", "money", "number") and isinstance(value, int | float):
        digits = len(f"{abs(value):,.0f}") + (3 if kind != "int" else 0)
        return float(digits + 1)
    return float(len(str(value)))


def width_for(values: Iterable[tuple[Any, str]], header: str = "", *,
              header_lines: int = 2, cap: float = MAX_WIDTH) -> float:  # fmt: skip
    """A column's width: its widest value (plus a margin), and room for ``header`` to wrap
    in at most ``header_lines`` lines with no word cut."""
    widest = max((shown_length(v, kind) for v, kind in values), default=0.0)
    words = max((len(w) for w in header.split()), default=0)
    by_lines = math.ceil(len(header) / header_lines) if header else 0
    need = max(widest + 2, words + 2, by_lines + 2, MIN_WIDTH)
    return float(min(need, max(cap, DATE_WIDTH)))


def lines_of(text: str, width: float) -> int:
    """Lines ``text`` wraps to in a column ``width`` characters wide."""
    return max(len(textwrap.wrap(text, max(int(width) - 1, 1))), 1)


def header_height(headers: Sequence[str], widths: Sequence[float]) -> float:
    """Points of a header row, so its most wrapped header shows whole."""
    lines = max((lines_of(h, w) for h, w in zip(headers, widths, strict=False)), default=1)
    return LINE_POINTS * lines + 3


def shared_widths(*tables: Sequence[Any]) -> list[float]:
    """One width per column for the tables stacked on one sheet: each column's widest."""
    return [float(max(cols[i].width for cols in tables if i < len(cols)))
            for i in range(max(len(cols) for cols in tables))]


def page_setup(ws: Any, widths: Sequence[float], *, repeat_rows: int | None = 0,
               one_page: bool = False) -> None:  # fmt: skip
    """A4, landscape when wider than a portrait page, fit to one page wide (as many pages
    tall as needed, or one when ``one_page``), header rows repeated on every page, and a
    footer naming the sheet and page (``Summary · page 1``)."""
    ws.set_paper(A4)
    if sum(widths) > PORTRAIT_CHARS:
        ws.set_landscape()
    else:
        ws.set_portrait()
    ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.6)
    ws.fit_to_pages(1, 1 if one_page else 0)
    if repeat_rows is not None:
        ws.repeat_rows(repeat_rows)
    ws.set_footer("&L&A · page &P", {"margin": 0.25})


#: A streamed table's text column grows with its longest value up to this width (a longer
#: one, an error message, is cut at the cell's edge on screen and on paper).
STREAMED_MAX_WIDTH = 40.0


def fit_lengths(columns: Sequence[Any], lengths: dict[str, int]) -> list[Any]:
    """``columns`` with each column named in ``lengths`` (key → longest value in
    characters) as wide as that value, up to :data:`STREAMED_MAX_WIDTH`."""
    from dataclasses import replace

    return [replace(c, width=max(c.width, min(lengths[c.key] + 2.0, STREAMED_MAX_WIDTH)))
            if c.key in lengths else c for c in columns]  # fmt: skip


def fit_text_columns(columns: Sequence[Any], frame: Any) -> list[Any]:
    """``columns`` (:class:`~scheduler.reports.columns.Column`) with each text column as wide
    as the longest value ``frame`` holds for it (a small table read whole, e.g. Opt-outs)."""
    from dataclasses import replace

    out = []
    for column in columns:
        if column.kind in ("text", "user_text") and column.key in frame:
            longest = max((len(str(v)) for v in frame[column.key] if isinstance(v, str)),
                          default=0)  # fmt: skip
            column = replace(column, width=max(column.width, min(longest + 2.0, MAX_WIDTH)))
        out.append(column)
    return out
