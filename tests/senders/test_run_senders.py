"""The senders of a run where people look: ``campaign status`` (text at 80 columns and
``--json``) says each sender's state since when, why, and what to do when it is held or
throttled; the report's Senders sheet has each sender's state, counts and state changes
during the run. The sentences are pure functions, tested with fixed datetimes."""

from __future__ import annotations

import json
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

import openpyxl
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.core.time_words import iso_utc
from scheduler.core.timeutil import utcnow
from scheduler.core.units import load_zone
from scheduler.ledger import access
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import ChangeSource, RunStatus, SenderStatus
from scheduler.reports import write_report
from scheduler.views.run_senders import RunSender, sender_lines
from tests.factories import T0, make_run

runner = CliRunner()
ZONE = "America/Sao_Paulo"
LONG_REASON = ("opt-outs passed 3% of the day's sends (7 of 190): the number is held until "
               "someone looks at the replies")


def _sender(name: str, state: str, **facts: object) -> RunSender:
    return RunSender(sender=name, state=state, since=T0, **facts)  # type: ignore[arg-type]


def test_each_sender_says_its_state_since_when_why_and_what_to_do() -> None:
    senders = [
        _sender("s1", "warming", changed_by="engine", warm_day=3, warm_days=8, warm_cap=65,
                sends_today=12, score=96.0, throttle=1.0),
        _sender("s2", "paused", changed_by="operator", reason=LONG_REASON, score=38.0,
                throttle=1.0, held=True, what_to_do=(
                    "no sends through s2 until a person resumes it: "
                    "`campaign senders resume s2 --reason TEXT`")),
        _sender("s3", "throttled", changed_by="engine", reason="429s (12 in the window)",
                score=61.0, throttle=0.5, sends_today=40,
                what_to_do="it speeds up again step by step while its signals stay good"),
        RunSender(sender="s4", state="new"),
    ]
    lines = sender_lines(senders, ZONE, width=78)
    assert max(len(line) for line in lines) <= 78, lines
    assert lines[:3] == [
        "senders of this run:",
        "s1 warming by the health rules since 2026-11-23 09:00 -03:00",
        "    warm-up day 3 of 8, 65 today · score 96 · 12 sent today",
    ]
    flat = " ".join(line.strip() for line in lines)
    assert "warm-up day 3 of 8, 65 today · score 96 · 12 sent today" in flat
    assert ("s2 paused by a person since 2026-11-23 09:00 -03:00 · score 38 · 0 sent today "
            f"why: {LONG_REASON}") in flat
    # the command is never split over two lines
    assert any("`campaign senders resume s2 --reason TEXT`" in line for line in lines)
    assert ("s3 throttled at 50% of its rate by the health rules since 2026-11-23 09:00 "
            "-03:00 · score 61 · 40 sent today why: 429s (12 in the window) it speeds up "
            "again step by step") in flat
    assert "    2026-11-23 09:00 -03:00 · score 61 · 40 sent today" in lines  # never split
    assert "s4 has no profile yet" in flat
    assert "every sender is held" not in flat
    held = sender_lines([senders[1]], ZONE, waiting=True)
    assert held[1].startswith("every sender is held: the run waits")


def _run_with_a_paused_sender(ledger: Ledger) -> tuple[int, datetime, datetime]:
    """A running run of 12 rows through s1, s2, s3 earlier today (the command reads the real
    clock): s1 3 sends and 1 failure, s2 2 sends then paused by a person, s3 throttled;
    (run id, the sends' time, the pause's time)."""
    run_id = make_run(ledger, 12, senders=("s1", "s2", "s3"))
    ledger.set_status(run_id, RunStatus.RUNNING)
    now = utcnow()
    midnight = now.astimezone(load_zone(ZONE)).replace(hour=0, minute=0, second=0,
                                                       microsecond=0)
    sent_at, paused_at = midnight + (now - midnight) / 3, midnight + 2 * (now - midnight) / 3
    with access.read(ledger.engine) as conn:
        due = dq.due_deliveries(conn, run_id, now + timedelta(days=1), limit=6)
    with access.transaction(ledger.engine) as conn:
        spq.ensure_profiles(conn, ["s1", "s2", "s3"], sent_at, state=SenderStatus.HEALTHY)
        dq.claim(conn, [(row.id, "s1") for row in due[:4]], sent_at)
        dq.claim(conn, [(row.id, "s2") for row in due[4:]], sent_at)
        dq.record_accepted(conn, [(row.id, f"M{row.id}") for row in due if row != due[3]],
                           sent_at)
        dq.record_final(conn, [(due[3].id, "", "400: not on WhatsApp")], "failed", sent_at)
        spq.change_state(conn, "s2", SenderStatus.PAUSED, LONG_REASON, ChangeSource.OPERATOR,
                         paused_at, score=38.0)
        spq.change_state(conn, "s3", SenderStatus.THROTTLED, "429s (12 in the window)",
                         ChangeSource.ENGINE, paused_at, score=61.0, throttle=0.5)
    return run_id, sent_at, paused_at


def test_status_and_the_report_say_a_paused_sender_and_why(project: Path, ledger: Ledger,
                                                            tmp_path: Path) -> None:
    run_id, _sent_at, paused_at = _run_with_a_paused_sender(ledger)
    local = paused_at.astimezone(load_zone(ZONE))
    result = runner.invoke(app, ["status", str(run_id)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    flat = " ".join(line.strip() for line in lines)
    assert (f"s2 paused by a person since {local:%Y-%m-%d %H:%M} -03:00 · score 38 · "
            f"2 sent today why: {LONG_REASON} no sends through s2 until a person resumes "
            "it: `campaign senders resume s2 --reason TEXT`") in flat
    assert "s1 healthy by the health rules since" in flat and "4 sent today" in flat
    assert "s3 throttled at 50% of its rate" in flat and "step by step" in flat

    shown = json.loads(runner.invoke(app, ["status", str(run_id), "--json"]).stdout)
    senders = {s["sender"]: s for s in shown["senders"]}
    assert list(senders) == ["s1", "s2", "s3"]
    s1, s2, s3 = senders["s1"], senders["s2"], senders["s3"]
    assert (s2["state"], s2["reason"], s2["changed_by"], s2["held"], s2["score"]) == (
        "paused", LONG_REASON, "operator", True, 38.0)
    assert s2["since"] == iso_utc(paused_at)
    assert "`campaign senders resume s2 --reason TEXT`" in s2["what_to_do"]
    assert (s1["sent"], s1["failed"], s1["sends_today"], s1["held"]) == (3, 1, 4, False)
    assert (s2["sent"], s2["sends_today"]) == (2, 2)
    assert (s3["state"], s3["throttle"], s3["sent"]) == ("throttled", 0.5, 0)

    report = write_report(ledger, [run_id], output=tmp_path / "report.xlsx")
    assert report.rows["Senders"] == 3
    with closing(openpyxl.load_workbook(report.path, read_only=True)) as book:  # holds the file
        rows = [list(row) for row in book["Senders"].iter_rows(values_only=True)]
    head = rows[0]
    table = {row[1]: dict(zip(head, row, strict=True)) for row in rows[1:4]}
    paused = table["s2"]
    assert (paused["State now"], paused["Reason"], paused["Score"]) == (
        "paused", LONG_REASON, 38.0)
    assert abs(paused["Since"] - local.replace(tzinfo=None)) < timedelta(seconds=1)
    assert (table["s1"]["Sent (this run)"], table["s1"]["Failed"]) == (3, 1)
    assert table["s3"]["Speed (share of its rate)"] == 0.5
    changes = rows[rows.index(["State changes while the run lasted"] + [None] * 12) + 1:]
    assert changes[0][:8] == ["Run", "Sender", "To", "At", "Reason", "Score", "From", "By"]
    said = [row[1:8] for row in changes[1:]]
    assert ["s2", "paused", paused["Since"], LONG_REASON, 38.0, "healthy", "a person"] in said
    assert ["s3", "throttled", paused["Since"], "429s (12 in the window)", 61.0, "healthy",
            "health rules"] in said
