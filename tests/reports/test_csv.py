"""The CSV variant: the Recipients table, UTF-8 with a BOM, formulas neutralised."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from scheduler.reports import write_report
from tests.reports.support import FORMULA, REPLY, Scenario


def test_csv_has_bom_accents_and_every_row(whatsapp_run: Scenario, tmp_path: Path) -> None:
    result = write_report(
        whatsapp_run.ledger, [whatsapp_run.run_id], fmt="csv", output=tmp_path / "r.csv"
    )
    assert result.path == tmp_path / "r.csv" and result.charts == ()
    assert result.rows == {"Recipients": 20}
    raw = result.path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert "José Conceição".encode() in raw and "São Paulo".encode() in raw
    assert "Obrigado! 😀".encode() in raw
    frame = pd.read_csv(result.path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert len(frame) == 20
    assert list(frame.columns[:6]) == ["Run", "Row", "Number", "nome", "cidade", "plano"]
    assert frame["State"].value_counts().to_dict() == whatsapp_run.states
    first = frame.iloc[0]
    assert first["Dispatched (America/Sao_Paulo)"] == "2026-11-23 09:00:00"
    assert first["Attempts"] == "1"  # an integer, not "1.0"
    assert frame.iloc[16]["Dispatched (America/Sao_Paulo)"] == ""


def test_csv_neutralises_formulas(whatsapp_run: Scenario, tmp_path: Path) -> None:
    result = write_report(whatsapp_run.ledger, [whatsapp_run.run_id], fmt="csv", output=tmp_path)
    assert result.path.name == f"promo-run-{whatsapp_run.run_id}.csv"
    rows = list(csv.DictReader(io.StringIO(result.path.read_text(encoding="utf-8-sig"))))
    assert rows[2]["nome"] == "'" + FORMULA
    assert rows[0]["Reply text"] == "'" + REPLY
    assert rows[1]["nome"] == "Cliente 1"
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@")), value
