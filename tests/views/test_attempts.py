"""A run's funnel per attempt and channel (issue 25) as the view, ``campaign status`` and its
JSON show it: first attempts from the tallies minus the attempt rows, each retry with the
rule that made it, the SMS fallback, what is due and what awaits a verdict. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.core.time_words import local_time
from scheduler.dispatch.recycle.verdicts import Fallback, Final, Retry
from scheduler.ledger import access
from scheduler.ledger.attempt_funnel import AttemptLine, AttemptsView, ordinal
from scheduler.ledger.queries import attempts as aq
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.recycling_store import RecyclingStore
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.views.attempts import attempt_lines
from scheduler.views.run_view import read_run_view
from tests.factories import T0, command_project, make_run
from tests.views.support import DUE, RECYCLE, ZONE, build_family, voice_row, voice_run

NOW = T0 + timedelta(hours=2)


def test_the_view_counts_each_attempt_and_the_fallback(ledger: Ledger,
                                                        settings: Settings) -> None:
    family = build_family(ledger)
    view = read_run_view(ledger, family.parent, settings=settings, now=NOW).attempts
    assert view is not None and view.run == family.parent
    assert view.fallback_run == family.fallback
    first, second, third, sms = view.lines
    assert (first.attempt, first.rows, first.sent, first.reached) == (1, 10, 9, 4)
    assert first.retried == {"no_answer": 3, "busy": 1} and first.made_by == {}
    assert first.reached_as == "answered" and first.not_reached == 5
    assert first.awaiting == 1 and first.due == 1  # row 9 awaits; row 10 is not sent yet
    assert (second.attempt, second.sent, second.reached) == (2, 4, 1)
    assert second.made_by == {"no_answer": 3, "busy": 1}
    assert second.retried == {"no_answer": 1} and second.awaiting == 1
    assert (third.attempt, third.sent, third.due, third.next_due_at) == (3, 0, 1, DUE)
    assert sms.fallback and sms.channel == "sms"
    assert (sms.sent, sms.reached, sms.reached_as) == (1, 1, "delivered")
    assert (view.due, view.next_due_at, view.awaiting) == (1, DUE, 2)


def test_first_attempts_agree_with_a_scan_of_the_rows(ledger: Ledger,
                                                      settings: Settings) -> None:
    family = build_family(ledger)
    d = deliveries.c
    with access.read(ledger.engine) as conn:
        scanned = Counter((r.attempt, r.state) for r in conn.execute(
            select(d.attempt, d.state).where(d.run_id == family.parent)))
    view = read_run_view(ledger, family.parent, settings=settings, now=NOW).attempts
    assert view is not None
    for line in view.lines[:-1]:
        mine = {s: n for (a, s), n in scanned.items() if a == line.attempt}
        assert line.rows == sum(mine.values()), ordinal(line.attempt)
        assert line.reached == mine.get("answered", 0)
        assert line.sent == sum(n for s, n in mine.items() if s != "planned")


def test_a_fallback_run_shows_its_parents_funnel(ledger: Ledger, settings: Settings) -> None:
    family = build_family(ledger)
    child = read_run_view(ledger, family.fallback, settings=settings, now=NOW).attempts
    parent = read_run_view(ledger, family.parent, settings=settings, now=NOW).attempts
    assert child == parent
    text = attempt_lines(child, ZONE, 80, run_id=family.fallback)
    assert text[0].startswith(f"Attempts of run {family.parent}: 1st 9 calls")


def test_a_run_without_second_chances_shows_none(ledger: Ledger, settings: Settings) -> None:
    run_id = make_run(ledger, 3)
    assert read_run_view(ledger, run_id, settings=settings, now=NOW).attempts is None


def test_awaiting_is_counted_up_to_a_cap(ledger: Ledger) -> None:
    family = build_family(ledger)
    with access.read(ledger.engine) as conn:
        assert aq.awaiting_verdict(conn, family.parent, 10) == 2
        assert aq.awaiting_verdict(conn, family.parent, 1) == 1


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger_url: str) -> None:
    command_project(tmp_path, monkeypatch, ledger_url)


@pytest.mark.usefixtures("project")
def test_status_says_the_funnel_per_attempt_in_80_columns(ledger: Ledger) -> None:
    family = build_family(ledger)
    runner = CliRunner()
    result = runner.invoke(app, ["status", str(family.parent)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    text = " · ".join(line.strip() for line in lines)  # a line ends where a " · " was
    assert ("Attempts: 1st 9 calls, 4 answered · 2nd 4, 1 answered · 3rd 0 of 1, 0 answered · "
            "SMS fallback 1, 1 delivered · 1 due from "
            f"{local_time(DUE, ZONE)} · 2 awaiting an outcome") in text
    assert "tried again: 2nd on no answer 3, busy 1 · 3rd on no answer 1" in text
    shown = json.loads(runner.invoke(app, ["status", str(family.parent), "--json"]).stdout)
    attempts = shown["attempts"]
    assert attempts["fallback_run"] == family.fallback and attempts["due"] == 1
    assert datetime.fromisoformat(attempts["next_due_at"]) == DUE
    assert [(x["attempt"], x["fallback"], x["sent"], x["reached"])
            for x in attempts["lines"]] == [(1, False, 9, 4), (2, False, 4, 1),
                                            (3, False, 0, 0), (0, True, 1, 1)]
    plain = json.loads(runner.invoke(app, ["status", str(make_run(ledger, 2)),
                                           "--json"]).stdout)
    assert plain["attempts"] is None
    assert "Attempts" not in runner.invoke(app, ["status"]).stdout


def test_the_view_counts_what_the_recycling_wrote(ledger: Ledger, settings: Settings) -> None:
    """Attempt rows made by the ledger's own recycle (part A's transaction): the funnel
    per attempt equals a scan of the rows, the fallback counted in its run."""
    parent = voice_run(ledger, "ura", "voice", RECYCLE)
    ledger.store_plan(parent, [[voice_row(i) for i in range(6)]], start_at=T0)
    ledger.create_fallback_run(parent, "sms", "{}")
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(deliveries).where(d.run_id == parent).values(
            state="not_answered", dispatched_at=T0, ended_at=T0))
    store = RecyclingStore(ledger, parent)
    watched = store.watched(NOW)
    assert len(watched) == 6
    later = NOW + timedelta(hours=1)
    verdicts = [Retry("no_answer", 2, later, "no answer"), Retry("busy", 2, later, "busy"),
                Retry("no_answer", 2, later, "no answer"), Fallback(2, "sms", "not answered"),
                Final("not answered", reached=False)]
    store.recycle(NOW, list(zip(watched, verdicts, strict=False)))
    view = read_run_view(ledger, parent, settings=settings, now=NOW).attempts
    assert view is not None
    first, second, sms = view.lines
    assert (first.sent, first.reached, first.retried) == (6, 0, {"no_answer": 2, "busy": 1})
    assert (second.rows, second.sent, second.due, second.next_due_at) == (3, 0, 3, later)
    assert second.made_by == {"no_answer": 2, "busy": 1}
    assert (sms.rows, sms.sent, sms.due) == (1, 0, 1)
    assert view.awaiting == 1  # the sixth row: no verdict yet
    with access.read(ledger.engine) as conn:
        scanned = Counter(r.attempt for r in conn.execute(
            select(d.attempt).where(d.run_id == parent)))
    assert scanned == {1: 6, 2: 3} and first.rows == scanned[1]


def test_status_lines_fit_80_columns_with_big_numbers_and_two_steps() -> None:
    big = 1_234_567
    lines = [AttemptLine(step=s, attempt=n, channel="voice", reached_as="answered",
                         made_by={} if n == 1 else {"no_answer": big, "busy": big},
                         rows=big, sent=big, reached=big // 2)
             for s in (0, 1) for n in (1, 2, 3)]
    lines.append(AttemptLine(attempt=0, fallback=True, channel="sms", sent=big, reached=big))
    view = AttemptsView(run=1, channel="voice", lines=lines, due=big, next_due_at=DUE,
                        awaiting=10_000, awaiting_counted=10_000)
    text = attempt_lines(view, ZONE, 80)
    assert max(len(line) for line in text) <= 80, text
    joined = " · ".join(line.strip() for line in text)
    assert "step 2 3rd 1,234,567, 617,283 answered" in joined
    assert "SMS fallback 1,234,567, 1,234,567 delivered" in joined
    assert "over 10,000 awaiting an outcome" in joined
    assert "step 1 2nd on no answer 1,234,567, busy 1,234,567" in joined


def test_a_call_answered_under_min_talk_is_not_counted_as_reached(ledger: Ledger,
                                                                  settings: Settings) -> None:
    """Two calls answered: one long, one of 4 s under min_talk that its no_answer rule
    called again (the attempt says "short_call"): attempt 1 reached one recipient, not two,
    and the retry says what made it."""
    parent = voice_run(ledger, "ura-short", "voice", RECYCLE)
    ledger.store_plan(parent, [[voice_row(i) for i in range(2)]], start_at=T0)
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(deliveries).where(d.run_id == parent).values(
            state="answered", dispatched_at=T0, sent_at=T0, ended_at=T0))
    store = RecyclingStore(ledger, parent)
    long_call, short_call = store.watched(NOW)
    later = NOW + timedelta(hours=1)
    store.recycle(NOW, [(long_call, Final("reached: answered for 40 s", reached=True)),
                        (short_call, Retry("short_call", 2, later,
                                           "answered for 4 s, less than min_talk 10 s"))])
    view = read_run_view(ledger, parent, settings=settings, now=NOW).attempts
    assert view is not None
    first, second = view.lines
    assert (first.sent, first.reached, first.not_reached) == (2, 1, 1)
    assert second.made_by == {"short_call": 1}
    lines = attempt_lines(view, ZONE)
    assert "2nd on answered under min_talk 1" in " ".join(lines)


def test_a_run_with_verdicts_to_come_says_why_it_is_not_over(ledger: Ledger,
                                                            settings: Settings) -> None:
    """Every call made, their outcomes not judged yet: the run is running with nothing to
    send, and its waits say why (not 'stuck'); its fallback run says whose rows it gets."""
    parent = voice_run(ledger, "ura-wait", "voice", RECYCLE)
    ledger.store_plan(parent, [[voice_row(i) for i in range(3)]], start_at=T0)
    child = ledger.create_fallback_run(parent, "sms", ledger.get_run(parent).options or "")
    d = deliveries.c
    with access.transaction(ledger.engine) as conn:
        conn.execute(update(deliveries).where(d.run_id == parent).values(
            state="not_answered", dispatched_at=T0, ended_at=T0))
    for run_id in (parent, child):
        ledger.set_status(run_id, "running")
    view = read_run_view(ledger, parent, settings=settings, now=NOW)
    waits = {w.kind: w.text for w in view.waits}  # (nobody sends it here: 'unserved' too)
    assert waits["second_chances"].startswith("3 sends await their outcome")
    assert not view.stuck.stuck
    fallback = read_run_view(ledger, child, settings=settings, now=NOW)
    waits = {w.kind: w.text for w in fallback.waits}
    assert f"run {parent} did not reach" in waits["second_chances"]
