"""The streamed rows: cell encoding, escaping, chunks, and tables split over several sheets."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import openpyxl
import pandas as pd
import pytest

from scheduler.reports import source, workbook, write_report
from scheduler.reports.columns import Column, json_dicts
from scheduler.reports.output import csv_safe, default_stem, formula_like
from scheduler.reports.sheetxml import (
    MAX_CELL_CHARS,
    RowEncoder,
    column_letter,
    escape_text,
    split_rows,
)
from tests.reports.support import Scenario

from .test_workbook import table

NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def test_column_letters() -> None:
    assert [column_letter(i) for i in (0, 25, 26, 51, 52, 701, 702)] == [
        "A",
        "Z",
        "AA",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]


def test_escaping() -> None:
    assert escape_text("a < b & c > d") == "a &lt; b &amp; c &gt; d"
    assert escape_text("bell\x07") == "bell_x0007_"
    assert escape_text("_x0041_") == "_x005F_x0041_"  # literal text, not an escape
    assert escape_text("ok \u00e9 😀") == "ok \u00e9 😀"
    assert len(escape_text("x" * (MAX_CELL_CHARS + 10))) == MAX_CELL_CHARS


def test_encoded_rows_are_cells_of_the_right_type() -> None:
    columns = [Column("n", "N", "int", 5), Column("t", "T", "user_text", 5),
               Column("d", "D", "date", 5), Column("x", "X", "money", 5)]  # fmt: skip
    frame = {"n": [1, None, 3], "t": ["=1+1", " padded ", None],
             "d": pd.Series(pd.to_datetime(["2026-01-01 12:00", None, "1900-03-01 00:00"])),
             "x": [0.5, float("nan"), float("inf")]}  # fmt: skip
    xml = RowEncoder(columns, {"user_text": 7, "date": 3, "money": 0}).encode(frame, 2)
    rows = ET.fromstring(f'<sheetData xmlns="{NS[1:-1]}">{xml}</sheetData>')
    cells = [[(c.get("r"), c.get("s"), c.get("t"), "".join(c.itertext())) for c in row]
             for row in rows]  # fmt: skip
    assert cells[0] == [
        ("A2", None, None, "1"),
        ("B2", "7", "inlineStr", "=1+1"),
        ("C2", "3", None, "46023.5"),
        ("D2", None, None, "0.5"),
    ]
    assert cells[1] == [("B3", "7", "inlineStr", " padded ")]
    assert cells[2] == [("A4", None, None, "3"), ("C4", "3", None, "61.0")]
    assert ' xml:space="preserve"> padded <' in xml


def test_split_rows_over_parts() -> None:
    frames = iter([{"a": [1, 2, 3]}, {"a": [4, 5]}, {"a": pd.Series([6, 7, 8])}])
    parts = [[list(f["a"]) for f in part] for part in split_rows(frames, [4, 2, 2])]
    assert parts == [[[1, 2, 3], [4]], [[5], [6]], [[7, 8]]]


def test_small_helpers() -> None:
    assert json_dicts(['{"a": 1}', "oops", None, "[1]"]) == [{"a": 1}, {}, {}, {}]
    assert json_dicts(['{"a": 1}', '{"b": "2"}']) == [{"a": 1}, {"b": "2"}]
    assert [formula_like(v) for v in ("=x", "+1", "-1", "@a", "\tx", "a=b")] == [
        True,
        True,
        True,
        True,
        True,
        False,
    ]
    assert csv_safe("@SUM(A1)") == "'@SUM(A1)" and csv_safe("ok") == "ok"
    assert default_stem(["Promo de Natal"], [3]) == "Promo-de-Natal-run-3"
    assert default_stem(["a"], list(range(1, 9))) == "a-runs-1-to-8"


def test_a_table_longer_than_a_sheet_continues_on_the_next(
    whatsapp_run: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workbook, "MAX_SHEET_ROWS", 7)
    monkeypatch.setattr(source, "CHUNK_ROWS", 3)
    result = write_report(whatsapp_run.ledger, [whatsapp_run.run_id], output=tmp_path)
    book = openpyxl.load_workbook(result.path)
    assert book.sheetnames[:5] == ["Summary", "Charts", "Recipients", "Recipients 2",
                                   "Recipients 3"]
    parts: list[dict[str, Any]] = []
    for name in ("Recipients", "Recipients 2", "Recipients 3"):
        assert book[name].freeze_panes == "A2"
        parts += table(book[name])
    assert [len(table(book[n])) for n in ("Recipients", "Recipients 2", "Recipients 3")] == [
        7,
        7,
        6,
    ]
    assert [p["Row"] for p in parts] == list(range(1, 21))
    assert [p["Number"] for p in parts] == whatsapp_run.numbers
    assert result.rows["Recipients"] == 20
