"""The report of a run with second chances (issue 25): the Attempts sheet (the funnel per
attempt and channel, with the rule that made each attempt) and, per recipient, the
attempt and channel that reached them, read back with openpyxl. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import openpyxl
from sqlalchemy import update

from scheduler.dispatch.recycle.verdicts import Fallback, Final
from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.recycling_store import RecyclingStore
from scheduler.ledger.runs import Ledger
from scheduler.reports import write_report
from scheduler.settings.retry_rules import FallbackOptions, RecycleOptions
from scheduler.settings.run import from_snapshot
from tests.factories import T0, make_run, number
from tests.views.support import DUE, SMS_PATH, ZONE, build_family, voice_run


def _table(ws: Any) -> list[dict[str, Any]]:
    rows = list(ws.iter_rows(values_only=True))
    header = rows[0]
    return [dict(zip(header, row, strict=True)) for row in rows[1:] if row[0] is not None]


def test_the_attempts_sheet_says_the_funnel_per_attempt(ledger: Ledger,
                                                        tmp_path: Path) -> None:
    family = build_family(ledger)
    report = write_report(ledger, [family.parent], output=tmp_path / "r.xlsx")
    assert report.rows["Attempts"] == 4
    ws = openpyxl.load_workbook(report.path)["Attempts"]
    rows = _table(ws)[:4]
    got = [(r["Attempt"], r["Channel"], r["Made by (rule: rows)"], r["Rows"], r["Sent"],
            r["Reached"], r["Reached means"], r["Tried again on"], r["Still due"])
           for r in rows]
    assert got == [
        ("1st", "voice", "first attempt", 10, 9, 4, "answered", "no answer 3, busy 1", 1),
        ("2nd", "voice", "no answer 3, busy 1", 4, 4, 1, "answered", "no answer 1", 0),
        ("3rd", "voice", "no answer 1", 1, 0, 0, "answered", None, 1),
        ("SMS fallback", "SMS", "fallback 1", 1, 1, 1, "delivered", None, 0),
    ]
    assert rows[0]["Reached (% of sent)"] == 4 / 9
    local_due = DUE.astimezone(ZoneInfo(ZONE)).replace(tzinfo=None)
    due = rows[2]["Next due (America/Sao_Paulo)"]
    assert due == local_due and isinstance(due, datetime)
    notes = [c for row in ws.iter_rows(values_only=True) for c in row if isinstance(c, str)]
    assert f"Run {family.parent}: 2 sent rows awaiting an outcome" in " ".join(notes)


def test_each_recipient_says_what_reached_them(ledger: Ledger, tmp_path: Path) -> None:
    family = build_family(ledger)
    report = write_report(ledger, [family.parent, family.fallback],
                          output=tmp_path / "r.xlsx")
    assert report.rows["Attempts"] == 4  # the family once, not once per run
    rows = _table(openpyxl.load_workbook(report.path)["Recipients"])
    by = {(r["Run"], r["Number"], r["Attempt"]): r["Reached by"] for r in rows}
    parent, child = family.parent, family.fallback
    assert by[(parent, number(0), 1)] == "voice, attempt 1"  # answered at once
    assert by[(parent, number(4), 1)] == "voice, attempt 2"  # every row of the recipient
    assert by[(parent, number(4), 2)] == "voice, attempt 2"
    assert by[(parent, number(5), 1)] == "not yet (voice, attempt 3 due)"
    assert by[(parent, number(6), 2)] == "not reached"  # busy, awaiting a verdict
    assert by[(parent, number(7), 1)] == "SMS fallback"
    assert by[(child, number(7), 3)] == "SMS fallback"
    assert by[(parent, number(8), 1)] == "not reached"
    assert by[(parent, number(9), 1)] is None  # not sent yet
    made = {(r["Number"], r["Attempt"]): r["Made by"] for r in rows if r["Run"] == parent}
    assert made[(number(6), 2)] == "busy" and made[(number(6), 1)] is None


def test_a_run_without_second_chances_has_no_attempts(ledger: Ledger,
                                                      tmp_path: Path) -> None:
    run_id = make_run(ledger, 3)
    report = write_report(ledger, [run_id], output=tmp_path / "r.xlsx")
    book = openpyxl.load_workbook(report.path)
    assert "Attempts" not in book.sheetnames and "Attempts" not in report.rows
    header = [c.value for c in book["Recipients"][1]]
    assert "Reached by" not in header and "Attempt" not in header


def test_a_whatsapp_run_says_who_the_sms_fallback_reached(ledger: Ledger,
                                                          tmp_path: Path) -> None:
    """Fallbacks written by the ledger's own recycle: delivered or read on WhatsApp is
    reached there; the rest by the SMS if it was delivered, else not reached."""
    recycle = RecycleOptions(fallback=FallbackOptions(after_s=3600, when="not_delivered",
                                                      channel="sms"))
    parent = voice_run(ledger, "promo", "whatsapp", recycle)
    rows = [{"row": i + 1, "to": number(i), "step": 0, "kind": "text",
             "path": "/api/v1/messages/send/text", "payload": {"text": "oi"},
             "variables": {}, "region": "BR", "state": "planned", "reason": None,
             "watch": 1, "fallback": {"kind": "sms", "path": SMS_PATH,
                                      "payload": {"text": "oi"}}} for i in range(4)]
    ledger.store_plan(parent, [rows], start_at=T0)
    child = ledger.create_fallback_run(parent, "sms", from_snapshot({}).to_json())
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(deliveries).where(d.run_id == parent).values(
            state="sent", dispatched_at=T0, sent_at=T0))
        conn.execute(update(deliveries).where(d.run_id == parent, d.row == 1).values(
            state="delivered", delivered_at=T0))
        conn.execute(update(deliveries).where(d.run_id == parent, d.row == 2).values(
            state="read", delivered_at=T0, read_at=T0))
    store = RecyclingStore(ledger, parent)
    later = T0 + timedelta(hours=2)
    watched = sorted(store.watched(later), key=lambda w: w.row)
    store.recycle(later, [(watched[0], Final("reached", reached=True)),
                          (watched[1], Final("reached", reached=True)),
                          (watched[2], Fallback(2, "sms", "not delivered")),
                          (watched[3], Fallback(2, "sms", "not delivered"))])
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(deliveries).where(d.run_id == child, d.row == 3).values(
            state="delivered", dispatched_at=later, delivered_at=later))
        conn.execute(update(deliveries).where(d.run_id == child, d.row == 4).values(
            state="undelivered", dispatched_at=later))
    report = write_report(ledger, [parent, child], output=tmp_path / "r.xlsx")
    book = openpyxl.load_workbook(report.path)
    by = {(r["Run"], r["Row"]): r["Reached by"] for r in _table(book["Recipients"])}
    assert by == {(parent, 1): "WhatsApp, attempt 1", (parent, 2): "WhatsApp, attempt 1",
                  (parent, 3): "SMS fallback", (parent, 4): "not reached",
                  (child, 3): "SMS fallback", (child, 4): "not reached"}
    sheet = {r["Attempt"]: (r["Sent"], r["Reached"], r["Reached means"])
             for r in _table(book["Attempts"])[:2]}
    assert sheet == {"1st": (4, 2, "delivered"), "SMS fallback": (2, 1, "delivered")}
