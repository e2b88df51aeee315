"""The rows of big sheets, streamed as SpreadsheetML into the workbook that xlsxwriter wrote.

Why not ``worksheet.write_*`` for every cell: xlsxwriter spends about 10 µs per cell (its
per-call checks and one file write per cell; measured 26 s for 100,000 rows × 24 columns
in ``constant_memory`` mode on the reference machine), which alone breaks figure P5's goal.
Here a chunk's cells are built a column at a time (about 1 µs per cell) as exactly the XML
that xlsxwriter's ``constant_memory`` mode writes (inline strings, plain numbers, ``s``
style indices), and written straight into the final zip. xlsxwriter still writes everything
else: styles, header rows, widths, frozen panes, auto-filters, charts and the small sheets.

Only the rows are ours; the sheet's XML around them (``<dimension>`` fixed to the real
size) comes from xlsxwriter, so the file is what xlsxwriter would have written.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from scheduler.reports.columns import Column, Frame, excel_serial

#: A sheet holds at most this many rows besides its header (Excel's limit is 1,048,576).
MAX_SHEET_ROWS = 1_048_575
#: Excel's limit on the characters of one cell.
MAX_CELL_CHARS = 32_767

_NEEDS_ESCAPE = re.compile(r"[&<>\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]"
                           r"|_x[0-9A-Fa-f]{4}_")  # fmt: skip
_LITERAL_ESCAPE = re.compile(r"_x[0-9A-Fa-f]{4}_")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_PRESERVE = ' xml:space="preserve"'
_DIMENSION = re.compile(r'<dimension ref="[^"]*"/>')
_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def column_letter(index: int) -> str:
    """``0`` → ``A``, ``25`` → ``Z``, ``26`` → ``AA``."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def escape_text(value: str) -> str:
    """``value`` as SpreadsheetML element text (XML entities, ``_xHHHH_`` for controls)."""
    if len(value) > MAX_CELL_CHARS:
        value = value[:MAX_CELL_CHARS]
    if not _NEEDS_ESCAPE.search(value):
        return value
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _LITERAL_ESCAPE.sub(lambda m: "_x005F" + m.group(), value)
    value = _CONTROL.sub(lambda m: f"_x{ord(m.group()):04X}_", value)
    return _SURROGATE.sub("\ufffd", value)


def _number_texts(values: Any, kind: str) -> list[str | None]:
    """Cell values as the text of ``<v>``: ``None`` where missing or not finite."""
    if isinstance(values, pd.Series) and values.dtype.kind in "mM":
        numbers = np.asarray(excel_serial(values), dtype="float64")
    else:
        series = values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
        numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    finite = np.isfinite(numbers)
    if kind == "int":
        texts = map(str, np.where(finite, numbers, 0).astype("int64").tolist())
    else:
        texts = map(repr, numbers.tolist())
    return [t if ok else None for t, ok in zip(texts, finite.tolist(), strict=True)]


def _clean_texts(items: list[Any]) -> bool:
    """True when no value of a text column needs escaping, space-keeping or truncating.

    Cheap checks first (C-level substring and ``isprintable`` scans); the regex only runs
    when some value holds a non-printable character (often a harmless newline).
    """
    present = [v for v in items if v.__class__ is str and v]
    if not present:
        return True
    if any(v[0].isspace() or v[-1].isspace() for v in present):
        return False
    if max(map(len, present)) > MAX_CELL_CHARS:
        return False
    blob = "\n".join(present)
    if "&" in blob or "<" in blob or ">" in blob or "_x" in blob:
        return False
    return all(map(str.isprintable, present)) or not _NEEDS_ESCAPE.search(blob)


class RowEncoder:
    """Turns frames of a table into ``<row>`` elements, given the workbook's style indices."""

    def __init__(self, columns: Sequence[Column], styles: Mapping[str, int]) -> None:
        self.columns = list(columns)
        self.letters = [column_letter(i) for i in range(len(self.columns))]
        self.styles = {kind: f' s="{index}"' for kind, index in styles.items() if index}

    def encode(self, frame: Frame, first_row: int) -> str:
        """The XML of ``frame``'s rows, the first one at spreadsheet row ``first_row``."""
        length = frame_length(frame)
        if not length:
            return ""
        rows = [str(r) for r in range(first_row, first_row + length)]
        columns = [self._column(col, letter, frame[col.key], rows)
                   for col, letter in zip(self.columns, self.letters, strict=True)]  # fmt: skip
        cells = [c for c in columns if c is not None]
        lines: Iterator[tuple[str, ...]] = zip(rows, *cells, strict=True)  # (row, its cells...)
        return "".join([f'<row r="{r}">{"".join(c)}</row>' for r, *c in lines])

    def _column(self, col: Column, letter: str, values: Any, rows: list[str]
                ) -> list[str] | None:  # fmt: skip
        """One column's cells (``None`` when the whole column is empty in this frame)."""
        style = self.styles.get(col.kind, "")
        if col.kind in ("text", "user_text"):
            items = values.tolist() if isinstance(values, pd.Series) else values
            pre, mid = f'<c r="{letter}', f'"{style} t="inlineStr"><is><t'
            if _clean_texts(items):
                return [f"{pre}{r}{mid}>{v}</t></is></c>" if v.__class__ is str and v else ""
                        for r, v in zip(rows, items, strict=True)]  # fmt: skip
            return [f"{pre}{r}{mid}{_PRESERVE if v[0].isspace() or v[-1].isspace() else ''}>"
                    f"{escape_text(v)}</t></is></c>" if isinstance(v, str) and v else ""
                    for r, v in zip(rows, items, strict=True)]  # fmt: skip
        if not isinstance(values, pd.Series) and not any(v is not None for v in values):
            return None
        texts = _number_texts(values, col.kind)
        pre, mid = f'<c r="{letter}', f'"{style}><v>'
        return [f"{pre}{r}{mid}{t}</v></c>" if t is not None else ""
                for r, t in zip(rows, texts, strict=True)]  # fmt: skip


def frame_length(frame: Frame) -> int:
    """Rows in a frame."""
    return len(next(iter(frame.values()))) if frame else 0


def _slice(frame: Frame, start: int, stop: int) -> Frame:
    return {k: v.iloc[start:stop] if isinstance(v, pd.Series) else v[start:stop]
            for k, v in frame.items()}  # fmt: skip


def split_rows(frames: Iterator[Frame], sizes: Sequence[int]) -> Iterator[Iterator[Frame]]:
    """Cut one stream of frames into consecutive parts of ``sizes`` rows (one per sheet)."""
    pending: list[Frame] = []

    def part(size: int) -> Iterator[Frame]:
        left = size
        while left > 0:
            frame = pending.pop() if pending else next(frames, None)
            if frame is None:
                return
            length = frame_length(frame)
            if length > left:
                pending.append(_slice(frame, left, length))
                frame = _slice(frame, 0, left)
                length = left
            left -= length
            yield frame

    for size in sizes:
        yield part(size)


@dataclass
class StreamedSheet:
    """Rows to put into one sheet of the workbook: its name, encoder, row count, frames."""

    sheet: str
    encoder: RowEncoder
    rows: int
    frames: Iterator[Frame]


def sheet_members(archive: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name → the zip member holding its XML (read from the workbook's relationships)."""
    book = ET.fromstring(archive.read("xl/workbook.xml"))
    rels = ET.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    targets = {rel.get("Id"): rel.get("Target", "") for rel in rels}
    out = {}
    for sheet in book.iter(f"{_MAIN_NS}sheet"):
        target = targets[sheet.get(_REL_ID)]
        out[sheet.get("name", "")] = (
            target.lstrip("/") if target.startswith("/") else (f"xl/{target}")
        )
    return out


def _stream(out: IO[bytes], xml: str, sheet: StreamedSheet) -> int:
    head, sep, tail = xml.partition("</sheetData>")
    if not sep:
        raise ValueError(f"sheet {sheet.sheet!r} has no <sheetData> to fill")
    last = f"{column_letter(len(sheet.encoder.columns) - 1)}{sheet.rows + 1}"
    out.write(_DIMENSION.sub(f'<dimension ref="A1:{last}"/>', head, count=1).encode())
    row = 2
    for frame in sheet.frames:
        out.write(sheet.encoder.encode(frame, row).encode("utf-8", "replace"))
        row += frame_length(frame)
    out.write((sep + tail).encode())
    return row - 2


def splice(source: Path, target: Path, sheets: Sequence[StreamedSheet]) -> dict[str, int]:
    """Copy the workbook ``source`` to ``target``, streaming each sheet's rows into it.

    Returns the rows written per sheet. Sheet XML members are copied in their order, so
    the parts of one table split over several sheets are filled one after the other.
    """
    written: dict[str, int] = {}
    with (
        zipfile.ZipFile(source) as src,
        zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as dst,
    ):
        members = sheet_members(src)
        by_member = {members[s.sheet]: s for s in sheets}
        for info in src.infolist():
            data = src.read(info.filename)
            item = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            item.compress_type = zipfile.ZIP_DEFLATED
            sheet = by_member.get(info.filename)
            if sheet is None:
                dst.writestr(item, data, compresslevel=6)
                continue
            big = sheet.rows * max(len(sheet.encoder.columns), 1) * 48 > 1_500_000_000
            # Opened by name so the archive's compresslevel (1: fast) applies to the big part.
            with dst.open(info.filename, "w", force_zip64=big) as out:
                written[sheet.sheet] = _stream(out, data.decode("utf-8"), sheet)
    return written
