"""``campaign senders``: every sender's state, warm-up, sends today and its session's plan
limits (from the sandbox, embedded or configured), in text at 80 columns and ``--json``;
``pause | resume | retire ID --reason`` as a person uses them."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger import access
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import ChangeSource, SenderStatus
from scheduler.sandbox.testing import SandboxHandle
from scheduler.views.senders import read_senders
from tests.factories import T0, make_run, number
from tests.incli import campaign
from tests.senders.support import dispatched_run

runner = CliRunner()
CAMPAIGN = [sys.executable, "-c", "from scheduler.cli import main; main()"]
LONG_REASON = ("opt-outs passed 3% of the day's sends (7 of 190): the number is held until "
               "someone looks at the replies")


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def _listed(*args: str) -> dict[str, Any]:
    shown = json.loads(_ok("senders", "--json", *args))
    return {entry["sender"]: entry for entry in shown["senders"]} | {"": shown}


@pytest.fixture
def known(project: Path, ledger: Ledger) -> Ledger:
    """A run naming s1 and s2; s1 paused by the engine at T0, the account's profile, and
    s2 with no profile yet."""
    make_run(ledger, 2, senders=("s1", "s2"))
    with access.transaction(ledger.engine) as conn:
        spq.ensure_profiles(conn, ["s1", "account"], T0)
        spq.change_state(conn, "s1", SenderStatus.PAUSED, LONG_REASON, ChangeSource.ENGINE,
                         T0, score=38.0, throttle=0.5)
    return ledger


def test_the_list_shows_each_sender_and_the_embedded_sandboxs_limits(known: Ledger) -> None:
    listed = _listed()
    s1, s2, account = listed["s1"], listed["s2"], listed["account"]
    assert (s1["state"], s1["reason"], s1["since"]) == (
        "paused", LONG_REASON, "2026-11-23T12:00:00+00:00")
    assert (s1["warm_day"], s1["score"], s1["throttle"], s1["zone"]) == (
        1, 38.0, 0.5, "America/Sao_Paulo")
    assert s2["state"] == "new" and s2["since"] is None and s2["kind"] == "session"
    # no service configured: the limits come from the embedded sandbox, and say so
    assert "embedded sandbox" in listed[""]["limits_from"]
    assert s1["limits"]["limits"]["messages"] == 100_000
    assert s1["limits"]["left"]["messages"] == 100_000 and s1["limits_error"] is None
    assert account["kind"] == "account" and account["limits"] is None
    assert "SMS/voice account" in account["limits_error"]

    text = _ok("senders")
    lines = text.splitlines()
    assert max(len(line) for line in lines if not line.startswith("ledger: ")) <= 80, text
    assert next(line for line in lines if line.startswith("s1 ")).split() == [
        "s1", "paused", "day", "1", "0", "38", "50%"]
    assert next(line for line in lines if line.startswith("s2 ")).split()[1] == "new"
    flat = " ".join(line.strip() for line in lines)
    assert "plan limits from: the embedded sandbox" in flat
    assert f"paused since 2026-11-23 09:00 -03:00: {LONG_REASON}" in flat
    assert "messages 100,000 of 100,000 left" in flat
    assert "T12:00" not in text and "+00:00" not in text


def test_limits_come_from_the_configured_service_and_a_failure_stays_on_its_line(
        known: Ledger, make_sandbox: Callable[..., SandboxHandle],
        monkeypatch: pytest.MonkeyPatch) -> None:
    service = make_sandbox(daily_message_limit=50)
    service.create_session("s1")
    for i in range(3):
        sent = service.send("text", {"sessionId": "s1", "to": number(i), "text": f"m{i}"})
        assert sent.status_code == 200, sent.text
    monkeypatch.setenv("CAMPAIGN_BASE_URL", service.base_url)
    monkeypatch.setenv("CAMPAIGN_API_KEY", service.api_key)

    listed = _listed()
    s1, s2 = listed["s1"], listed["s2"]
    assert (s1["limits"]["limits"]["messages"], s1["limits"]["used"]["messages"],
            s1["limits"]["left"]["messages"]) == (50, 3, 47)
    assert s2["limits"] is None
    assert "session s2 does not exist" in s2["limits_error"]  # never made up
    assert service.api_key not in json.dumps(listed)

    lines = _ok("senders").splitlines()
    flat = " ".join(line.strip() for line in lines)
    assert "messages 47 of 50 left" in flat
    at = lines.index("s2:")
    assert "session s2 does not exist" in " ".join(lines[at + 1:at + 4])
    assert not any(service.api_key in line for line in lines)


def _history(ledger: Ledger, sender: str) -> list[tuple[str | None, str, str | None, str]]:
    with access.read(ledger.engine) as conn:
        return [(c.from_state, c.to_state, c.reason, c.source)
                for c in reversed(spq.history(conn, sender))]


def test_a_person_pauses_resumes_and_retires_a_sender_with_a_reason(known: Ledger) -> None:
    said = _ok("senders", "pause", "s2", "--reason", "owner asked")
    assert "s2 is now paused" in said and "owner asked" in said
    assert _listed()["s2"]["state"] == "paused"
    assert "s2 is now warming (was paused)" in _ok("senders", "resume", "s2", "--reason",
                                                    "owner agreed")
    assert "nothing changed" in _ok("senders", "resume", "s2", "--reason", "again")
    _ok("senders", "retire", "s2", "--reason", "number returned to the carrier")
    entry = _listed()["s2"]
    assert (entry["state"], entry["reason"]) == ("retired", "number returned to the carrier")
    assert _history(known, "s2") == [
        (None, "warming", spq.NEW_SENDER_REASON, "engine"),
        ("warming", "paused", "owner asked", "operator"),
        ("paused", "warming", "owner agreed", "operator"),
        ("warming", "retired", "number returned to the carrier", "operator")]
    # a sender throttled, then paused by the rules, is resumed throttled
    with access.transaction(known.engine) as conn:
        spq.change_state(conn, "account", SenderStatus.THROTTLED, "429s", "engine", T0)
        spq.change_state(conn, "account", SenderStatus.PAUSED, "logged out", "event", T0)
    assert "account is now throttled" in _ok("senders", "resume", "account", "--reason",
                                             "scanned again")


def test_an_unknown_sender_is_named_with_the_known_ones_and_nothing_changes(
        known: Ledger, project: Path) -> None:
    before = {s: _history(known, s) for s in ("s1", "s2", "account")}
    done = campaign("senders", "pause", "s7", "--reason", "typo", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "no sender 's7'" in done.stderr and "account, s1, s2" in done.stderr
    assert {s: _history(known, s) for s in ("s1", "s2", "account")} == before
    assert _listed()["s1"]["state"] == "paused"
    missing = runner.invoke(app, ["senders", "retire", "s1"])
    assert missing.exit_code == 2 and "--reason" in missing.output


def test_sends_today_are_counted_in_the_senders_zone(ledger: Ledger) -> None:
    hour = timedelta(hours=1)
    # T0 is 09:00 in São Paulo: 02:00 UTC was 23:00 there the day before
    dispatched_run(ledger, [("s1", T0 - 10 * hour), ("s1", T0 - 8 * hour), ("s1", T0)])
    (info,) = read_senders(ledger, T0 + hour).senders
    assert (info.sender, info.state, info.sends_today) == ("s1", "new", 2)


def test_half_a_service_configuration_is_said_and_the_profiles_still_listed(
        known: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMPAIGN_BASE_URL", "http://127.0.0.1:9")  # and no API key
    listed = _listed()
    assert listed[""]["limits_from"] is None
    assert listed[""]["limits_note"].startswith("plan limits not read: ")
    assert listed["s1"]["state"] == "paused" and listed["s1"]["limits"] is None
    assert "plan limits not read" in _ok("senders")
