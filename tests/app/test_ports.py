"""Ports: a busy port is found before planning; a kept port taken meanwhile moves (the
demo's tests are in ``test_demo.py``)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from tests.app.support import clean_env, text_sends
from tests.factories import write_project
from tests.incli import in_process


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def test_a_busy_fixed_port_stops_the_run_before_planning(make_sandbox, tmp_path, busy_port
                                                         ) -> None:
    service = make_sandbox()
    service.create_session("s1")
    cwd = tmp_path / "shop"
    campaign = write_project(cwd, 3)
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_RECEIVER_PORT=str(busy_port))
    out = in_process(env, "run", str(campaign), cwd=cwd)  # refused: no process needed
    assert out.returncode == 1 and f"receiver_port {busy_port}" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (cwd / "state" / "campaign.db").exists()  # it made no ledger either
    runs = json.loads(in_process(env, "runs", "--json", cwd=cwd).stdout)["runs"]
    assert runs == [] and service.sends() == []


def test_a_kept_port_taken_meanwhile_moves_to_a_free_one(make_sandbox, tmp_path, busy_port
                                                         ) -> None:
    service = make_sandbox()
    service.create_session("s1")
    cwd = tmp_path / "shop"
    campaign = write_project(cwd, 3)
    (cwd / "state").mkdir()
    (cwd / "state" / "receiver.json").write_text(json.dumps({"token": "t" * 40,
                                                             "port": busy_port}))
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="1")
    out = in_process(env, "run", str(campaign), cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert f"receiver port {busy_port} (kept from the last run) is in use" in out.stdout
    kept = json.loads((cwd / "state" / "receiver.json").read_text())
    assert kept["port"] != busy_port and kept["token"] == "t" * 40
    assert len(text_sends(service.sends())) == 3
