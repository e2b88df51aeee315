"""``campaign sessions``: from an API key to a connected sender, as a user runs it.

The sandbox runs in its own process; every command runs from a folder that is not the
project (in a subprocess for the journey from a key to a connected sender, in this process
for the others), pointed at the sandbox by ``CAMPAIGN_BASE_URL`` / ``CAMPAIGN_API_KEY``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import zxingcpp
from PIL import Image

from tests.sessions.support import Cli, SandboxProcess


def decoded(path: Path) -> str:
    """The text of the QR code in the PNG at ``path``."""
    with Image.open(path) as image:
        results = zxingcpp.read_barcodes(image)
    assert len(results) == 1, f"{path}: {len(results)} codes"
    return results[0].text


def status_json(cli: Cli, env: dict[str, str], session_id: str) -> dict:
    """``campaign sessions status ID --json``, parsed."""
    result = cli("sessions", "status", session_id, "--json", env=env)
    assert result.code == 0, result.both
    return json.loads(result.out)


def assert_clean_failure(result) -> None:
    """Exit 1 with one error line, no traceback."""
    assert result.code == 1, result.both
    assert "Traceback" not in result.both
    assert result.err.startswith("error:"), result.err
    assert len(result.err.strip().splitlines()) == 1, result.err


@pytest.mark.slow
def test_from_api_key_to_a_connected_sender(process_cli: Cli, cli: Cli, service_env,
                                            workdir: Path, sandbox_process: SandboxProcess,
                                            tmp_path: Path):
    # The first and the last commands in a process of their own, as a user runs them (the
    # QR drawn in the terminal; a clean failure); the readouts between them in this process.
    created = process_cli("sessions", "create", "loja-sp-01", "--webhook",
                          "http://127.0.0.1:9/hook", env=service_env)
    assert created.code == 0, created.both
    assert "loja-sp-01 created" in created.out
    # The QR code is drawn in the terminal, within 80 columns, and saved as a PNG here.
    drawing = [line for line in created.out.splitlines() if "█" in line]
    assert len(drawing) > 20
    png = workdir / "qr-loja-sp-01.png"
    prose = [line for line in created.out.splitlines() if str(png) not in line]
    assert max(len(line) for line in prose) <= 80
    assert f"saved to {png}" in created.out
    record = status_json(cli, service_env, "loja-sp-01")
    assert record["status"] in {"connecting", "qr_ready"}
    assert record["ready"] is False
    assert "campaign sessions qr loja-sp-01" in record["fix"]
    assert record["webhookUrl"] == "http://127.0.0.1:9/hook"
    assert decoded(png) == record["qrCode"]

    # `qr -o` puts the PNG where asked; it is the same code.
    chosen = tmp_path / "codes" / "sender.png"
    chosen.parent.mkdir()
    shown = cli("sessions", "qr", "loja-sp-01", "-o", str(chosen), env=service_env)
    assert shown.code == 0, shown.both
    assert decoded(chosen) == record["qrCode"]
    text = cli("sessions", "status", "loja-sp-01", env=service_env)
    assert text.code == 0 and "connecting" in text.out and "not ready" in text.out

    # The phone scans it: the session is connected, with its number and name.
    sandbox_process.scan("loja-sp-01")
    connected = cli("sessions", "status", "loja-sp-01", env=service_env)
    assert connected.code == 0, connected.both
    assert "loja-sp-01: connected" in connected.out
    assert "ready to send" in connected.out
    record = status_json(cli, service_env, "loja-sp-01")
    assert record["ready"] is True and record["phone"] and record["name"]
    assert record["phone"] in connected.out

    listed = cli("sessions", "list", env=service_env)
    assert listed.code == 0, listed.both
    row = next(line for line in listed.out.splitlines() if line.startswith("loja-sp-01"))
    assert "connected" in row and record["phone"] in row
    assert max(len(line) for line in listed.out.splitlines()) <= 80
    as_json = cli("sessions", "list", "--json", env=service_env)
    ids = {r["sessionId"]: r for r in json.loads(as_json.out)}
    assert ids["loja-sp-01"]["status"] == "connected"

    moved = cli("sessions", "webhook", "loja-sp-01", "https://example.com/hooks/sp01",
                env=service_env)
    assert moved.code == 0, moved.both
    assert status_json(cli, service_env, "loja-sp-01")["webhookUrl"] == (
        "https://example.com/hooks/sp01")

    # A connected session has nothing to scan; creating it again says it exists.
    again = process_cli("sessions", "qr", "loja-sp-01", env=service_env)
    assert_clean_failure(again)
    assert "already connected" in again.err
    twice = process_cli("sessions", "create", "loja-sp-01", env=service_env)
    assert_clean_failure(twice)
    assert "already exists" in twice.err


def test_qr_goes_to_the_state_folder_when_there_is_one(cli: Cli, service_env, workdir: Path):
    (workdir / "state").mkdir()
    created = cli("sessions", "create", "loja-rj-01", env=service_env)
    assert created.code == 0, created.both
    png = workdir / "state" / "qr-loja-rj-01.png"
    assert png.is_file()
    assert decoded(png) == status_json(cli, service_env, "loja-rj-01")["qrCode"]
    assert not (workdir / "qr-loja-rj-01.png").exists()
    # From a folder inside the project, the PNG still goes to the project's state folder.
    png.unlink()
    inside = workdir / "data" / "lists"
    inside.mkdir(parents=True)
    shown = cli("sessions", "qr", "loja-rj-01", env=service_env, cwd=inside)
    assert shown.code == 0, shown.both
    assert png.is_file() and not list(inside.iterdir())


def test_a_missing_session_says_how_to_create_it(cli: Cli, service_env):
    for command in ("status", "qr"):
        result = cli("sessions", command, "loja-fantasma", env=service_env)
        assert_clean_failure(result)
        assert "loja-fantasma does not exist" in result.err
        assert "campaign sessions create loja-fantasma" in result.err
    bad = cli("sessions", "webhook", "loja-fantasma", "https://example.com/h", env=service_env)
    assert_clean_failure(bad)
    assert "campaign sessions create loja-fantasma" in bad.err


def test_a_wrong_key_is_a_clear_401_and_never_printed(cli: Cli, sandbox_process):
    secret = "sk-live-wrong-7f3a9c1e"
    env = {"CAMPAIGN_BASE_URL": sandbox_process.base_url, "CAMPAIGN_API_KEY": secret}
    for args in (("list",), ("status", "x"), ("create", "x"), ("qr", "x"),
                 ("webhook", "x", "https://example.com/h")):
        result = cli("sessions", *args, env=env)
        assert_clean_failure(result)
        assert "HTTP 401" in result.err and "CAMPAIGN_API_KEY" in result.err
        assert secret not in result.both


def test_without_a_service_the_commands_say_what_is_missing(cli: Cli, sandbox_process):
    nothing = cli("sessions", "list")
    assert_clean_failure(nothing)
    assert "no service configured" in nothing.err
    assert "CAMPAIGN_BASE_URL" in nothing.err and "CAMPAIGN_API_KEY" in nothing.err

    no_key = cli("sessions", "list", env={"CAMPAIGN_BASE_URL": sandbox_process.base_url})
    assert_clean_failure(no_key)
    assert "no API key" in no_key.err and "CAMPAIGN_API_KEY" in no_key.err

    secret = "sk-only-a-key-1234"
    no_url = cli("sessions", "create", "x", env={"CAMPAIGN_API_KEY": secret})
    assert_clean_failure(no_url)
    assert "no service address" in no_url.err and "CAMPAIGN_BASE_URL" in no_url.err
    assert secret not in no_url.both


def test_an_unreachable_service_names_the_address(cli: Cli, sandbox_process):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{closed}"
    result = cli("sessions", "status", "loja-sp-01",
                 env={"CAMPAIGN_BASE_URL": base_url, "CAMPAIGN_API_KEY": "k-123456"})
    assert_clean_failure(result)
    assert f"cannot reach the service at {base_url}" in result.err
    assert "k-123456" not in result.both


def test_a_webhook_that_is_not_an_address_is_refused_before_asking(cli: Cli, service_env):
    result = cli("sessions", "webhook", "loja-sp-01", "example.com/hook", env=service_env)
    assert_clean_failure(result)
    assert "http:// or https://" in result.err
