"""A real run through five senders, one of them rate-limited and then logged out mid-run.

``campaign run`` runs in a subprocess against ``campaign sandbox`` in another process (its
own receiver taking the sessions' webhooks, the ledger of the pass). The sandbox plays the
trouble of one session, s3, with its seeded per-session rules: a rate-limit storm (429 with
``Retry-After``) after a few sends, then a logout after a few more (``connection.status``
``logged_out`` to the run's receiver, every later send refused 409). From the sandbox's own
record (``/sandbox/sends``, ``/sandbox/trouble``): nothing went through s3 after the
logout, every recipient was sent exactly once, s3's share finished by the four others; and
the reason is shown by ``campaign senders``, ``campaign status`` and the report.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries.tables import deliveries
from scheduler.sandbox.testing import write_text_project
from tests.app.support import cli
from tests.channels.support import numbers_sent, run_env, sandbox_process
from tests.factories import open_test_ledger
from tests.incli import in_process

N = 200
SENDERS = ("s1", "s2", "s3", "s4", "s5")
TEXT = "/messages/send/text"
#: s3's trouble: two 429s after its 4th send, logged out by its 8th. At 4 sends a second
#: per sender the other four need about 12 s for their share, so the logout comes
#: mid-run (about 5 s in), with most rows still planned.
STORM = {"s3": {"after_sends": 4, "for_requests": 2, "retry_after_s": 1}}
LOGOUT_AFTER = 8
#: No receipts or replies (none is needed here, and the run ends sooner); session status
#: events on: the logout reaches the run's receiver as ``connection.status``.
QUIET = {"delivered_rate": 0.0, "read_rate": 0.0, "reply_rate": 0.0, "poll_vote_rate": 0.0,
         "session_status_events": True}
#: Said on the run's timeline and kept as s3's reason.
REASON = "its session is logged_out (connection.status)"


def _project(root: Path) -> Path:
    """A text campaign to N people through the five senders, 4 sends a second each, no
    jitter (the default jitter would make the run last minutes)."""
    path = write_text_project(root, N, rate="4/s", senders=SENDERS, name="saude",
                              text="Oi {{ nome }}")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('rate = "4/s"\n', 'rate = "4/s"\njitter = "0"\n'),
                    encoding="utf-8")
    return path


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _ledger(url: str) -> tuple[list[Any], list[Any]]:
    """Every delivery (to, state, sender, attempts, last_error, dispatched_at) and s3's
    state changes, from the ledger."""
    d = deliveries.c
    with open_test_ledger(url) as ledger, access.read(ledger.engine) as conn:
        rows = conn.execute(select(d.to, d.state, d.sender, d.attempts, d.last_error,
                                   d.dispatched_at)).all()
        changes = spq.history(conn, "s3")
    return list(rows), sorted(changes, key=lambda change: change.id)


@pytest.mark.slow
def test_a_logged_out_sender_gets_no_send_and_the_others_finish_its_rows(
        tmp_path: Path, ledger_url: str) -> None:
    with sandbox_process(seed=7) as box:
        box.set_faults(**QUIET, rate_limit_storm=STORM,
                       logout_after={"s3": {"sends": LOGOUT_AFTER}})
        for name in SENDERS:
            box.create_session(name)
        shop = tmp_path / "shop"
        campaign = _project(shop)
        env = run_env(box.base_url, box.api_key, ledger_url)
        run = cli(env, "run", str(campaign), cwd=shop)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "run 1: completed" in run.stdout, run.stdout
        # the timeline says when s3 left the rotation and why
        assert f"sender s3 logged_out: {REASON}; no sends through it" in run.stdout, run.stdout

        sends = [s for s in box.sends() if TEXT in s["path"]]
        trouble = box._get("/sandbox/trouble")["s3"]
        senders_text = in_process(env, "senders", cwd=shop)
        senders_json = in_process(env, "senders", "--json", cwd=shop)
        status_text = in_process(env, "status", "1", cwd=shop)
        status_json = in_process(env, "status", "1", "--json", cwd=shop)
        report = in_process(env, "report", "1", cwd=shop)
    assert "Traceback" not in box.log and "sandbox bug" not in box.log, box.log

    # The sandbox's record: s3 was rate-limited, then logged out mid-run by its 8th send.
    assert [storm["answered429"] for storm in trouble["storms"]] == [2], trouble
    assert trouble["loggedOutAt"] is not None, f"s3 was never logged out: {trouble}"
    logged_out_at = _at(trouble["loggedOutAt"])
    through_s3 = [s for s in sends if s["sessionId"] == "s3"]
    assert len(through_s3) == LOGOUT_AFTER == trouble["accepted"], through_s3
    # nothing went through s3 after its logout (the send that caused it is its last)
    assert all(_at(s["at"]) <= logged_out_at for s in through_s3), (through_s3, trouble)
    later = [s for s in sends if _at(s["at"]) > logged_out_at]
    assert later and {s["sessionId"] for s in later} <= {"s1", "s2", "s4", "s5"}, later
    # every recipient exactly once, none lost: s3's share went to the other four
    taken = numbers_sent(sends, TEXT)
    assert len(taken) == N and set(taken.values()) == {1}, Counter(taken.values())
    per_sender = Counter(s["sessionId"] for s in sends)
    assert sum(per_sender[name] for name in ("s1", "s2", "s4", "s5")) == N - LOGOUT_AFTER

    # The ledger agrees: every row sent once, s3's rows are the sandbox's, and none was
    # claimed for s3 after the run took it out of rotation.
    rows, changes = _ledger(ledger_url)
    assert Counter(row.state for row in rows) == {"sent": N}
    assert {row.to for row in rows if row.sender == "s3"} == {s["to"] for s in through_s3}
    held = [c for c in changes if c.to_state == "logged_out"]
    assert len(held) == 1 and held[0].reason == REASON and held[0].source == "event", changes
    assert _utc(held[0].at) >= logged_out_at
    assert all(_utc(row.dispatched_at) <= _utc(held[0].at)
               for row in rows if row.sender == "s3"), rows
    # the 429ed sends were tried again and went out once, like every other row
    retried = [row for row in rows if row.attempts > 1]
    assert [row.attempts for row in retried] == [2, 2], retried

    # `campaign senders`: s3 logged out, with the reason, in text and JSON
    assert senders_text.returncode == 0, senders_text.stderr
    assert re.search(r"^s3\s+logged_out\s", senders_text.stdout, re.M), senders_text.stdout
    s3_block = " ".join(senders_text.stdout.split("\ns3:\n", 1)[1]
                        .split("\ns4:\n", 1)[0].split())
    assert re.match(rf"logged_out since \S+ \S+ UTC: {re.escape(REASON)}", s3_block), s3_block
    shown = {entry["sender"]: entry for entry in json.loads(senders_json.stdout)["senders"]}
    assert (shown["s3"]["state"], shown["s3"]["reason"]) == ("logged_out", REASON)
    assert shown["s3"]["sends_today"] == LOGOUT_AFTER
    assert {shown[name]["state"] for name in ("s1", "s2", "s4", "s5")} == {"healthy"}

    # `campaign status`: the run completed, and its senders section names s3's reason
    assert status_text.returncode == 0, status_text.stderr
    assert "completed" in status_text.stdout.splitlines()[0], status_text.stdout
    said = " ".join(status_text.stdout.split())
    assert re.search(r"s3 logged_out .* why: " + re.escape(REASON), said), status_text.stdout
    status = json.loads(status_json.stdout)
    assert status["status"] == "completed" and status["counts"] == {"sent": N}, status
    in_status = {entry["sender"]: entry for entry in status["senders"]}
    assert (in_status["s3"]["state"], in_status["s3"]["reason"]) == ("logged_out", REASON)
    assert in_status["s3"]["held"] is True and in_status["s3"]["sent"] == LOGOUT_AFTER
    assert "campaign sessions qr s3" in in_status["s3"]["what_to_do"]

    # The report: each recipient's sender (s3's eight are the sandbox's) and attempts (the
    # two sends answered 429 were tried twice). A retried row's 429 is kept as its last
    # error only when its messages.sent beat the send's answer, so the Errors sheet may
    # or may not list the storm: not asserted.
    assert report.returncode == 0, report.stderr
    with closing(load_workbook(next((shop / "reports").glob("*.xlsx")), read_only=True)) as book:
        recipients = list(book["Recipients"].iter_rows(values_only=True))
        senders_sheet = list(book["Senders"].iter_rows(values_only=True))
    header = recipients[0]
    by_sender = Counter(line[header.index("Sender")] for line in recipients[1:])
    assert by_sender == per_sender, (by_sender, per_sender)
    attempts = Counter(line[header.index("Attempts")] for line in recipients[1:])
    assert attempts == {1: N - 2, 2: 2}, attempts
    # The Senders sheet: s3 logged out now with its reason, its 8 sends in this run, and
    # the change made by its session's status among the run's state changes.
    senders_now, changes_seen = _senders_sheet(senders_sheet)
    s3_now = senders_now["s3"]
    assert (s3_now["State now"], s3_now["Reason"], s3_now["Sent (this run)"]) == (
        "logged_out", REASON, LOGOUT_AFTER), s3_now
    assert {senders_now[name]["State now"] for name in ("s1", "s2", "s4", "s5")} == {"healthy"}
    assert [(c["To"], c["Reason"], c["By"]) for c in changes_seen if c["Sender"] == "s3"
            and c["To"] == "logged_out"] == [("logged_out", REASON, "session status")]


def _senders_sheet(lines: list[Any]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The Senders sheet's two tables (its rows' values): each sender's line by name, and the
    state changes (each table starts at a header row whose second cell is "Sender")."""
    starts = [i for i, line in enumerate(lines) if len(line) > 1 and line[1] == "Sender"]
    assert len(starts) == 2, lines
    tables = []
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        header = lines[start]
        tables.append([dict(zip(header, line, strict=False)) for line in lines[start + 1:end]
                       if line and line[1] is not None])
    return {entry["Sender"]: entry for entry in tables[0]}, tables[1]
