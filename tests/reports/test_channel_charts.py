"""SMS and voice runs in the report, from rows that real account events moved: the
channel's columns (workbook and CSV), the Summary sections the channel charts draw, the
native workbook charts over those rows, and the PNG chart of each channel."""

from __future__ import annotations

import json
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
import pytest
from PIL import Image

from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.reports import ReportResult, write_report
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0, number
from tests.reports.support import ids_by_row, set_rows, store
from tests.tracking.support import sms, voice

from .test_workbook import summary_values, table

CTX = ApplyContext(OptOutWords(["SAIR"]))
SMS_SENT = {"segments": 1, "encoding": "GSM-7", "costMicroReais": 45_000}


def _run(ledger: Ledger, channel: str, count: int, details: dict[str, Any] | None) -> int:
    """A run of ``count`` rows the service took (ids ``sms0``, ``voice1`` …), each with what
    the send's answer said (``details``), as the dispatcher leaves them."""
    rows = [{"to": number(i), "state": "planned", "reason": None, "variables": {"nome": f"C{i}"}}
            for i in range(count)]  # fmt: skip
    run_id = store(ledger, rows, name=f"{channel}-run", channel=channel, kind=channel)
    for i, delivery_id in enumerate(ids_by_row(ledger, run_id)):
        at = T0 + timedelta(seconds=i)
        set_rows(ledger, [delivery_id], state="accepted", sender="account", dispatched_at=at,
                 accepted_at=at, message_id=f"{channel}{i}", message_id_norm=f"{channel}{i}",
                 details=json.dumps(details) if details else None)  # fmt: skip
    return run_id


def _ingest(ledger: Ledger, events: list[dict[str, Any]]) -> None:
    for event in events:
        store_and_apply(TrackingStore(ledger),
                        [incoming_from(event, json.dumps(event), T0)], CTX, T0)


def _call(i: int, *, answered: bool, digits: str = "", cause: int = 16, talk: int = 0
          ) -> list[dict[str, Any]]:  # fmt: skip
    """The events of one call to recipient ``i`` (keys pressed one ``call.dtmf`` each)."""
    t = T0 + timedelta(minutes=i)
    events = [voice("call.started", f"voice{i}", number(i), t)]
    if answered:
        events.append(voice("call.answered", f"voice{i}", number(i), t + timedelta(seconds=5),
                            answered=True))  # fmt: skip
    for n, key in enumerate(digits):
        events.append(voice("call.dtmf", f"voice{i}", number(i), t + timedelta(seconds=8 + n),
                            digits=key))  # fmt: skip
    events.append(voice("call.ended", f"voice{i}", number(i), t + timedelta(seconds=60),
                        answered=answered, talkSeconds=talk if answered else None, cause=cause,
                        causeDescription=None))  # fmt: skip
    return events


@pytest.fixture
def sms_run(ledger: Ledger) -> int:
    """8 SMS: 3 delivered, 2 NO_COVERAGE, 1 BLACKLIST, 1 expired without a code, 1 with no
    report yet."""
    run_id = _run(ledger, "sms", 8, SMS_SENT)
    _ingest(ledger, [
        *(sms("sms.delivered", f"sms{i}", number(i), segments=1) for i in range(3)),
        sms("sms.undelivered", "sms3", number(3), errorCode="NO_COVERAGE"),
        sms("sms.undelivered", "sms4", number(4), errorCode="NO_COVERAGE"),
        sms("sms.undelivered", "sms5", number(5), errorCode="BLACKLIST"),
        sms("sms.expired", "sms6", number(6)),
    ])  # fmt: skip
    return run_id


@pytest.fixture
def voice_run(ledger: Ledger) -> int:
    """8 calls: 4 answered (keys 1, 2, 13, none), busy, no answer, voicemail, one ringing."""
    run_id = _run(ledger, "voice", 8, None)
    _ingest(ledger, [
        *_call(0, answered=True, digits="1", talk=30), *_call(1, answered=True, digits="2",
                                                              talk=20),
        *_call(2, answered=True, digits="13", talk=45), *_call(3, answered=True, talk=25),
        *_call(4, answered=False, cause=17), *_call(5, answered=False, cause=19),
        *_call(6, answered=False, cause=151),
        voice("call.started", "voice7", number(7), T0 + timedelta(minutes=7)),
    ])  # fmt: skip
    return run_id


def _section(ws: Any, title: str) -> tuple[dict[str, int], tuple[int, int]]:
    """A Summary section's labels → first value, and its first and last row (1-based)."""
    rows = list(ws.iter_rows(values_only=True))
    start = next(i for i, row in enumerate(rows) if row[0] == title) + 1
    end = next((i for i in range(start, len(rows)) if rows[i][0] is None), len(rows))
    values = {rows[i][0]: rows[i][1] for i in range(start, end)}
    return values, (start + 1, end)


def _chart_xml(report: ReportResult) -> list[bytes]:
    with zipfile.ZipFile(report.path) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith("xl/charts/chart"))
        return [archive.read(n) for n in names]


def _real_png(path: Path) -> None:
    assert path.stat().st_size > 10_000
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] >= 800
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000) or []
        assert len(colours) > 10


def test_sms_columns_delivery_by_error_code_and_its_charts(
        ledger: Ledger, sms_run: int, tmp_path: Path) -> None:  # fmt: skip
    report = write_report(ledger, [sms_run], output=tmp_path)
    book = openpyxl.load_workbook(report.path)
    rows = table(book["Recipients"])
    assert [r["State"] for r in rows] == ["delivered"] * 3 + ["undelivered"] * 4 + ["accepted"]
    assert [r["Error code"] for r in rows] == [None] * 3 + [
        "NO_COVERAGE",
        "NO_COVERAGE",
        "BLACKLIST",
        None,
        None,
    ]
    assert {r["SMS segments"] for r in rows} == {1} and {r["Encoding"] for r in rows} == {"GSM-7"}
    assert rows[0]["Cost (R$)"] == pytest.approx(0.045)
    values = summary_values(book["Summary"])
    assert values["Segments"][0] == 8
    assert values["Cost (R$)"][0] == pytest.approx(0.36)
    codes, (first, last) = _section(book["Summary"], "SMS delivery by error code")
    assert codes == {"delivered": 3, "NO_COVERAGE": 2, "BLACKLIST": 1, "no error code": 1,
                     "no report yet": 1}  # fmt: skip
    assert list(codes) == ["delivered", "NO_COVERAGE", "BLACKLIST", "no error code",
                           "no report yet"]  # fmt: skip
    charts = _chart_xml(report)
    assert len(charts) == 3  # sends per hour, funnel, SMS delivery
    assert f"Summary!$A${first}:$A${last}".encode() in charts[2]
    assert f"Summary!$B${first}:$B${last}".encode() in charts[2]
    stem = f"sms-run-run-{sms_run}"
    assert [p.name for p in report.charts] == [f"{stem}-sends-per-hour.png", f"{stem}-funnel.png",
                                               f"{stem}-sms-delivery.png"]  # fmt: skip
    _real_png(report.charts[2])


def test_voice_columns_outcomes_digits_and_their_charts(
        ledger: Ledger, voice_run: int, tmp_path: Path) -> None:  # fmt: skip
    report = write_report(ledger, [voice_run], output=tmp_path)
    book = openpyxl.load_workbook(report.path)
    rows = table(book["Recipients"])
    assert [r["State"] for r in rows] == ["answered"] * 4 + ["not_answered"] * 3 + ["sent"]
    assert [r["Answered"] for r in rows] == ["yes"] * 4 + ["no"] * 3 + [None]
    assert [r["Talk time (s)"] for r in rows] == [30, 20, 45, 25, None, None, None, None]
    assert [r["Digits"] for r in rows] == ["1", "2", "13", None, None, None, None, None]
    assert [r["Cause"] for r in rows] == ["normal"] * 4 + ["busy", "no answer", "voicemail",
                                                          None]  # fmt: skip
    outcomes, (o_first, o_last) = _section(book["Summary"], "Voice outcomes")
    assert list(outcomes.items()) == [("answered", 4), ("busy", 1), ("no answer", 1),
                                      ("voicemail", 1), ("no outcome yet", 1)]  # fmt: skip
    digits, (d_first, d_last) = _section(book["Summary"], "Digits pressed")
    assert list(digits.items()) == [("1", 1), ("13", 1), ("2", 1), ("no key pressed", 1)]
    charts = _chart_xml(report)
    assert len(charts) == 4  # sends per hour, funnel, outcomes, digits
    assert f"Summary!$A${o_first}:$A${o_last}".encode() in charts[2]
    assert f"Summary!$A${d_first}:$A${d_last}".encode() in charts[3]
    assert [p.name.rsplit("-", 2)[-2:] for p in report.charts][-1] == ["voice", "outcomes.png"]
    _real_png(report.charts[-1])


def test_csv_carries_the_channel_columns(ledger: Ledger, sms_run: int, voice_run: int,
                                         tmp_path: Path) -> None:  # fmt: skip
    report = write_report(ledger, [sms_run, voice_run], fmt="csv", output=tmp_path / "r.csv")
    frame = pd.read_csv(report.path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert len(frame) == 16
    sms_rows, voice_rows = frame.iloc[:8], frame.iloc[8:]
    assert sms_rows["Error code"].tolist()[3:6] == ["NO_COVERAGE", "NO_COVERAGE", "BLACKLIST"]
    assert sms_rows["Cost (R$)"].tolist()[0] == "0.045"
    assert sms_rows["SMS segments"].tolist()[0] == "1"
    assert voice_rows["Cause"].tolist()[4:7] == ["busy", "no answer", "voicemail"]
    assert voice_rows["Answered"].tolist()[:5] == ["yes", "yes", "yes", "yes", "no"]
    assert voice_rows["Talk time (s)"].tolist()[:4] == ["30", "20", "45", "25"]
    assert voice_rows["Digits"].tolist()[:4] == ["1", "2", "13", ""]


def test_a_report_of_both_channels_draws_both_charts(
        ledger: Ledger, sms_run: int, voice_run: int, tmp_path: Path) -> None:  # fmt: skip
    report = write_report(ledger, [sms_run, voice_run], output=tmp_path)
    stem = f"runs-{sms_run}-{voice_run}-"
    assert [p.name.removeprefix(stem) for p in report.charts] == [
        "sends-per-hour.png",
        "funnel.png",
        "sms-delivery.png",
        "voice-outcomes.png",
    ]
    book = openpyxl.load_workbook(report.path)
    codes, _ = _section(book["Summary"], "SMS delivery by error code")
    outcomes, _ = _section(book["Summary"], "Voice outcomes")
    assert codes["delivered"] == 3 and outcomes["answered"] == 0  # the first run is SMS
    rows = list(book["Summary"].iter_rows(values_only=True))
    total = rows[0].index("Total")
    totals = {
        r[0]: r[total]
        for r in rows
        if r[0] in ("answered", "no outcome yet", "no report yet", "delivered")
    }
    assert totals == {"answered": 4, "no outcome yet": 1, "no report yet": 1, "delivered": 3}
    assert len(_chart_xml(report)) == 5
