"""`kill -9` mid-run with default settings: the next process receives the retried events."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.app.support import CAMPAIGN, clean_env, text_sends, wait_for
from tests.factories import write_project
from tests.incli import in_process


def _webhook_url(service) -> str:
    body = service.api("GET", "/api/v1/sessions/s1").json()
    return (body.get("data") or body)["webhookUrl"]


@pytest.mark.slow
def test_events_retried_after_a_kill_reach_the_next_process(make_sandbox, tmp_path) -> None:
    # retries at 0.4, 0.8, 1.6, 3.2 ... s: the next process starts well inside them
    service = make_sandbox(webhook_retry_base_s=0.4, webhook_max_attempts=8,
                           webhook_delay_ms=(300, 600), latency_ms=(150, 300))
    # sends in flight and events on their way at the kill
    service.create_session("s1")
    cwd = tmp_path / "shop"
    campaign = write_project(cwd, 120, rate="30/s")
    # unknown rows are not judged here: the run need not hold its receiver through the
    # sandbox's 51 s of retries after the rows in doubt (it would by default, for 6 min)
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="8", CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="5")
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(text_sends(service.sends())) >= 30)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    first_url = _webhook_url(service)
    assert first_url and "token=" in first_url
    kept = json.loads((cwd / "state" / "receiver.json").read_text())
    assert kept["port"] and len(kept["token"]) >= 32
    assert (cwd / "state" / "receiver.json").stat().st_mode & 0o077 == 0  # a secret

    # the next run at once (in this process: no interpreter start-up between the kill and
    # its receiver, while the sandbox still retries the events at 0.4 s doubling)
    again = in_process(env, "run", str(campaign), cwd=cwd)
    assert again.returncode == 0, again.stderr
    assert _webhook_url(service) == first_url  # same port, same token
    sends = text_sends(service.sends())
    taken = Counter(s["to"] for s in sends)
    assert set(taken.values()) == {1}  # nobody twice
    states = _states(cwd / "state" / "campaign.db")
    assert len(states) == 120  # nobody lost
    # every send the service took is known as sent; only those it never took stay unknown
    unknown = {to for to, state in states.items() if state == "unknown"}
    assert not unknown & set(taken), sorted(unknown & set(taken))
    assert all(states[to] in ("accepted", "sent") for to in taken)


def _states(db: Path) -> dict[str, str]:
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        rows = dict(conn.execute(text('SELECT "to", state FROM deliveries')).all())
    engine.dispose()
    return rows
