"""``campaign status`` of a running run whose sender reached its daily cap: which sender,
its cap, when it was reached and when it sends again, in the campaign's zone, at 80
columns (Typer's runner, ``COLUMNS=80``; the command reads the real clock, so the sends
are placed earlier today and the expected times are computed from them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.core.timeutil import utcnow
from scheduler.core.units import load_zone
from scheduler.dispatch.windows import next_local_midnight
from scheduler.ledger import access
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from tests.factories import make_run

runner = CliRunner()
ZONE = load_zone("America/Sao_Paulo")


pytestmark = pytest.mark.usefixtures("terminal_80")


def test_status_says_which_sender_is_at_its_daily_cap_and_when_it_sends_again(
        ledger: Ledger) -> None:
    run_id = make_run(ledger, 12, senders=("s1", "s2"), definition={
        "pace": {"rate": "60/min", "daily_cap": 5}})
    ledger.set_status(run_id, RunStatus.RUNNING)
    now = utcnow()
    midnight = now.astimezone(ZONE).replace(hour=0, minute=0, second=0, microsecond=0)
    first, fifth = midnight + (now - midnight) / 3, midnight + 2 * (now - midnight) / 3
    with access.read(ledger.engine) as conn:
        due = dq.due_deliveries(conn, run_id, now + timedelta(days=1), limit=7)
    with access.transaction(ledger.engine) as conn:  # s1: 4 sends, then its 5th; s2: 2 sends
        dq.claim(conn, [(row.id, "s1") for row in due[:4]], first)
        dq.claim(conn, [(due[4].id, "s1")], fifth)
        dq.claim(conn, [(row.id, "s2") for row in due[5:]], fifth)
    result = runner.invoke(app, ["status", str(run_id)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    again = next_local_midnight(now, ZONE).astimezone(ZONE)
    said = " ".join(line.strip() for line in lines)
    assert (f"sender s1 reached its daily cap of 5 at {fifth.astimezone(ZONE):%H:%M} -03:00; "
            f"sends again {again:%Y-%m-%d} 00:00 -03:00 (in ") in said
    assert "the other senders send their deliveries meanwhile" in said
    assert "sender s2" not in said  # 2 of its 5 sent
    waits = json.loads(runner.invoke(app, ["status", str(run_id), "--json"]).stdout)["waits"]
    assert waits["capped"] == [{"sender": "s1", "kind": "daily_cap", "limit": 5,
                                "reached_at": fifth.astimezone(UTC).isoformat("T", "seconds"),
                                "sends_again": again.astimezone(UTC).isoformat()}]


def test_status_of_a_run_not_running_says_no_wait(ledger: Ledger) -> None:
    run_id = make_run(ledger, 3, definition={"pace": {"rate": "60/min", "daily_cap": 1}})
    now = datetime.now(ZONE)
    with access.read(ledger.engine) as conn:
        due = dq.due_deliveries(conn, run_id, now + timedelta(days=1), limit=1)
    with access.transaction(ledger.engine) as conn:
        dq.claim(conn, [(due[0].id, "s1")], now)
    result = runner.invoke(app, ["status", str(run_id), "--json"])
    assert json.loads(result.stdout)["waits"] == {"lines": [], "capped": []}
