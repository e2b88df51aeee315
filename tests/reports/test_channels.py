"""SMS and voice runs: the report takes segments, cost, call outcomes, talk time and digits
from ``deliveries.details``; several runs and time zones in one report."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from scheduler.reports import write_report
from scheduler.reports.details import DetailScan, cells, parse
from tests.factories import number
from tests.reports.support import details_run, ids_by_row, set_rows, store

from .test_workbook import summary_values, table


def test_sms_segments_cost_and_delivery(ledger: Any, tmp_path: Path) -> None:
    run_id = details_run(
        ledger,
        "sms",
        [
            {"segments": 2, "costMicroReais": 45_000},
            {"segments": 1, "cost_micro_reais": 22_500},
            {"segments": 3, "costMicroReais": 67_500, "errorCode": "NO_COVERAGE"},
            None,
        ],
        ["delivered", "delivered", "undelivered", "accepted"],
    )
    result = write_report(ledger, [run_id], output=tmp_path)
    book = openpyxl.load_workbook(result.path)
    values = summary_values(book["Summary"])
    assert values["Segments"][0] == 6
    assert values["Cost (R$)"][0] == pytest.approx(0.135)
    assert values["Undelivered"][0] == 1
    assert values["Delivered (% of sent)"][0] == pytest.approx(2 / 4)
    assert "Read" not in values  # the SMS funnel stops at delivered
    rows = table(book["Recipients"])
    assert [r["SMS segments"] for r in rows] == [2, 1, 3, None]
    assert rows[0]["Cost (R$)"] == pytest.approx(0.045)
    assert rows[2]["Error code"] == "NO_COVERAGE"
    cost = [c.value for c in book["Recipients"][1]].index("Cost (R$)") + 1
    assert book["Recipients"].cell(row=2, column=cost).number_format == "#,##0.00"


def test_voice_outcome_talk_time_and_digits(ledger: Any, tmp_path: Path) -> None:
    run_id = details_run(
        ledger,
        "voice",
        [
            {"answered": True, "talkSeconds": 42, "digits": "1", "cause": 16},
            {"answered": True, "talkSeconds": 18, "causeDescription": "caller hung up"},
            {"answered": False, "cause": 19},
            {"answered": False, "cause": 17, "bridge": "sip-2"},
        ],
        ["answered", "answered", "not_answered", "not_answered"],
    )
    result = write_report(ledger, [run_id], output=tmp_path)
    book = openpyxl.load_workbook(result.path)
    values = summary_values(book["Summary"])
    assert values["Dialed"][0] == 4 and values["Answered"][0] == 2
    assert values["Pressed a key"][0] == 1
    assert values["Not answered"][0] == 2
    assert values["Talk time (min)"][0] == pytest.approx(1.0)
    assert values["Answered (% of dialed)"][0] == pytest.approx(0.5)
    rows = table(book["Recipients"])
    assert [r["Answered"] for r in rows] == ["yes", "yes", "no", "no"]
    assert [r["Cause"] for r in rows] == ["normal", "caller hung up", "no answer", "busy"]
    assert [r["Talk time (s)"] for r in rows] == [42, 18, None, None]
    assert rows[0]["Digits"] == "1"
    assert rows[3]["Other details"] == '{"bridge": "sip-2"}'


def test_details_keys_and_columns() -> None:
    assert parse('{"talk_seconds": 5, "CauseDescription": "x"}') == {
        "talk_seconds": 5,
        "cause_description": "x",
    }
    assert parse("not json") == {"unparsed": "not json"}
    assert cells(parse('{"answered": false}'))["d:answered"] == "no"
    assert cells(parse('{"cause": 151, "causeDescription": "Voicemail"}'))["d:cause"] == "voicemail"
    assert cells(parse('{"cause": 999}'))["d:cause"] == "cause 999"
    scan = DetailScan(keys={"segments"})
    assert [c[1] for c in scan.columns(["whatsapp"])] == ["SMS segments"]
    assert [c[1] for c in DetailScan().columns(["whatsapp"])] == []
    assert "Talk time (s)" in [c[1] for c in DetailScan().columns(["voice"])]


def test_several_runs_with_a_total_column(ledger: Any, clock: Any, tmp_path: Path) -> None:
    rows = [
        {"to": number(i), "state": "planned", "reason": None, "variables": {"nome": "A"}}
        for i in range(3)
    ]
    first = store(ledger, rows)
    clock.now = clock.now.replace(day=24)
    second = store(ledger, rows)
    third = store(ledger, rows, name="other")
    result = write_report(ledger, [third, first, second], output=tmp_path)
    assert result.run_ids == (first, second, third)
    assert result.path.name == f"runs-{first}-{second}-{third}.xlsx"
    book = openpyxl.load_workbook(result.path)
    header = [c.value for c in book["Summary"][1]]
    assert header[:5] == ["Metric", f"Run {first}", f"Run {second}", f"Run {third}", "Total"]
    values = summary_values(book["Summary"])
    assert values["Planned"][:4] == [3, 3, 3, 9]
    assert values["Campaign"][3] == "promo, other"
    assert values["Planned at"][0] == datetime(2026, 11, 23, 9, 0)
    assert values["Planned at"][3] == datetime(2026, 11, 23, 9, 0)  # earliest, one zone
    assert len(table(book["Recipients"])) == 9


def test_runs_in_different_zones(ledger: Any, tmp_path: Path) -> None:
    rows = [{"to": number(0), "state": "planned", "reason": None, "variables": {}}]
    lisbon = ledger.create_run(
        campaign_name="eu",
        channel="whatsapp",
        definition_path="x",
        definition={},
        delivery_mode="at-most-once",
        timezone="Europe/Lisbon",
    )
    ledger.store_plan(
        lisbon,
        [
            [
                {
                    "row": 1,
                    "step": 0,
                    "kind": "text",
                    "path": "/p",
                    "payload": {},
                    "region": "PT",
                    **rows[0],
                }
            ]
        ],
        start_at=ledger.clock(),
    )
    brazil = store(ledger, rows)
    for run_id in (lisbon, brazil):
        set_rows(ledger, ids_by_row(ledger, run_id), state="accepted", dispatched_at=ledger.clock())
    book = openpyxl.load_workbook(write_report(ledger, [lisbon, brazil], output=tmp_path).path)
    rows_out = table(book["Recipients"])
    assert [r["Time zone"] for r in rows_out] == ["Europe/Lisbon", "America/Sao_Paulo"]
    assert [r["Dispatched (local)"] for r in rows_out] == [
        datetime(2026, 11, 23, 12, 0),
        datetime(2026, 11, 23, 9, 0),
    ]
