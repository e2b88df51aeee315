"""``campaign sessions status`` shows the last status event the receiver stored: the sandbox
(its own process) posts ``connection.status`` on scan and disconnect to a real receiver whose
ledger the command then reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.core.httpserver import BackgroundServer
from scheduler.ledger import access
from scheduler.ledger.queries import sessions as sq
from scheduler.ledger.runs import Ledger
from scheduler.tracking import create_receiver
from tests.factories import open_test_ledger
from tests.sessions.support import Cli, SandboxProcess
from tests.tracking.support import TOKEN, ReceiverHandle, settings, wait_until


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[str, Ledger, ReceiverHandle]]:
    """A ledger (SQLite file) and a receiver storing into it."""
    url = f"sqlite:///{(tmp_path / 'ledger.db').as_posix()}"
    with open_test_ledger(url) as ledger:
        config = settings()
        handle = ReceiverHandle(BackgroundServer(create_receiver(config, ledger)).start(),
                                config)
        try:
            yield url, ledger, handle
        finally:
            handle.close()


def _last(ledger: Ledger, session_id: str) -> str | None:
    with access.read(ledger.engine) as conn:
        row = sq.latest_statuses(conn, [session_id]).get(session_id)
    return row.status if row else None


def test_status_shows_the_last_status_event_stored(
        cli: Cli, service_env: dict[str, str], sandbox_process: SandboxProcess,
        stored: tuple[str, Ledger, ReceiverHandle], workdir: Path) -> None:
    url, ledger, receiver = stored
    created = cli("sessions", "create", "evt-01", "--webhook", receiver.url, env=service_env)
    assert created.code == 0, created.both
    assert "?token=***" in created.out and TOKEN not in created.out, created.out
    wait_until(lambda: _last(ledger, "evt-01") == "qr_ready")
    sandbox_process.scan("evt-01")
    wait_until(lambda: _last(ledger, "evt-01") == "connected")
    sandbox_process.disconnect("evt-01")
    wait_until(lambda: _last(ledger, "evt-01") == "disconnected")

    env = {**service_env, "CAMPAIGN_DATABASE_URL": url}
    text = cli("sessions", "status", "evt-01", env=env)
    assert text.code == 0, text.both
    # no run yet: no campaign's zone to use, so UTC, labelled
    assert re.search(r"last status event at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: "
                     r"disconnected \(phone\s+disconnected\)", text.out), text.out
    # the webhook is shown without the receiver's token (a secret), here and in --json
    assert "webhooks/session?token=***" in text.out and TOKEN not in text.out, text.out
    # the service's own time of the record too, not its raw ISO 8601
    assert re.search(r"^  updated  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", text.out, re.M), text.out
    assert not re.search(r"\dT\d\d:\d\d", text.out), text.out
    shown = cli("sessions", "status", "evt-01", "--json", env=env)
    assert shown.code == 0, shown.both
    data = json.loads(shown.out)
    assert data["webhookUrl"].endswith("?token=***") and TOKEN not in shown.out
    assert data["status"] == "disconnected"
    assert data["lastStatusEvent"]["status"] == "disconnected"
    assert data["lastStatusEvent"]["reason"] == "phone disconnected"

    # Outside a project with a ledger: the service's record, and no ledger made for it.
    bare = cli("sessions", "status", "evt-01", env=service_env)
    assert bare.code == 0, bare.both
    assert "last status event: none received yet" in bare.out
    assert list(workdir.rglob("*.db")) == []
