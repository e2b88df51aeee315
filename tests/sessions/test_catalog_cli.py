"""``campaign catalog``: a product read at once and through a queued command, as a user runs it.

The sandbox runs in its own process (shared by this module, so its sessions are this
module's); every command runs in a subprocess pointed at it by ``CAMPAIGN_BASE_URL`` /
``CAMPAIGN_API_KEY``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.sessions.support import Cli, SandboxProcess

BUSINESS = "5511977776666"
JID = f"{BUSINESS}@s.whatsapp.net"


def connected_session(box: SandboxProcess, session_id: str) -> None:
    """Create ``session_id`` on the sandbox and scan its QR code."""
    response = httpx.post(f"{box.base_url}/api/v1/sessions", timeout=10,
                          headers={"Authorization": box.api_key},
                          json={"sessionId": session_id, "type": "unofficial"})
    response.raise_for_status()
    box.scan(session_id)


def set_knobs(box: SandboxProcess, **knobs: Any) -> None:
    """Change the sandbox's run-time settings."""
    httpx.post(f"{box.base_url}/sandbox/faults", json=knobs, timeout=10).raise_for_status()


def product_of(box: SandboxProcess, session_id: str, product_id: str) -> dict[str, Any]:
    """The product as the sandbox gives it, asked directly."""
    response = httpx.post(f"{box.base_url}/api/v1/catalog/product/get", timeout=10,
                          headers={"Authorization": box.api_key},
                          json={"sessionId": session_id, "product_id": product_id,
                                "business_jid": JID})
    response.raise_for_status()
    return response.json()["data"]


def assert_clean_failure(result: Any, *words: str) -> None:
    """Exit 1 with one error line naming ``words``, no traceback."""
    assert result.code == 1, result.both
    assert "Traceback" not in result.both
    assert result.err.startswith("error:") and len(result.err.strip().splitlines()) == 1
    for word in words:
        assert word in result.err, result.err


@pytest.fixture(scope="module")
def shop(sandbox_process: SandboxProcess) -> SandboxProcess:
    """The sandbox process with one connected session, ``vitrine``."""
    connected_session(sandbox_process, "vitrine")
    return sandbox_process


def test_a_product_at_once_through_the_only_connected_session(cli: Cli, service_env, shop):
    expected = product_of(shop, "vitrine", "8812345")
    shown = cli("catalog", "get", "8812345", "--business", BUSINESS, env=service_env)
    assert shown.code == 0, shown.both
    lines = shown.out.splitlines()
    assert lines[0] == f"Product 8812345 of {JID} (via session vitrine)"
    assert lines[1].split(None, 1) == ["name", expected["name"]]
    assert lines[2].split() == ["price", f"{expected['price']:.2f}", "BRL"]
    assert f"  url           {expected['url']}" in lines
    as_json = cli("catalog", "get", "8812345", "--business", JID, "--json", env=service_env)
    assert as_json.code == 0, as_json.both
    assert json.loads(as_json.out) == expected


def test_async_shows_the_command_queued_running_and_done(cli: Cli, service_env, shop):
    set_knobs(shop, command_queued_s=[0.1, 0.1], command_running_s=[1.0, 1.0])
    shown = cli("catalog", "get", "555", "--business", BUSINESS, "--async",
                "--session", "vitrine", env=service_env)
    assert shown.code == 0, shown.both
    lines = shown.out.splitlines()
    command_id = lines[0].split()[1].rstrip(":")
    assert lines[:3] == [f"command {command_id}: {status}"
                         for status in ("queued", "running", "done")]
    assert lines[3] == f"Product 555 of {JID} (via session vitrine)"
    assert lines[4].split(None, 1) == ["name", product_of(shop, "vitrine", "555")["name"]]
    later = cli("catalog", "command", command_id, "--json", env=service_env)
    assert later.code == 0, later.both
    record = json.loads(later.out)
    assert record["status"] == "done" and record["result"]["id"] == "555"


def test_a_failed_command_and_other_errors(cli: Cli, service_env, shop):
    set_knobs(shop, command_queued_s=[0.05, 0.05], command_running_s=[0.05, 0.05],
              command_fail_rate=1.0)
    try:
        failed = cli("catalog", "get", "555", "--business", BUSINESS, "--async",
                     env=service_env)
    finally:
        set_knobs(shop, command_fail_rate=0.0)
    assert_clean_failure(failed, "failed: Catalog temporarily unavailable")
    assert failed.out.splitlines()[0].endswith(": queued")
    missing = cli("catalog", "get", "missing-1", "--business", BUSINESS, env=service_env)
    assert_clean_failure(missing, "HTTP 404", "Product not found")
    missing_async = cli("catalog", "get", "missing-1", "--business", BUSINESS, "--async",
                        env=service_env)
    assert_clean_failure(missing_async, "failed: Product not found")
    assert_clean_failure(cli("catalog", "get", "1", "--business", "shop", env=service_env),
                         "--business 'shop'")
    assert_clean_failure(cli("catalog", "command", "cmd_nope", env=service_env),
                         "Command not found")


def test_with_two_connected_sessions_the_session_must_be_named(cli: Cli, service_env, shop):
    connected_session(shop, "vitrine-2")
    ambiguous = cli("catalog", "get", "1", "--business", BUSINESS, env=service_env)
    assert_clean_failure(ambiguous, "--session", "vitrine, vitrine-2")
    named = cli("catalog", "get", "1", "--business", BUSINESS, "--session", "vitrine-2",
                env=service_env)
    assert named.code == 0 and "(via session vitrine-2)" in named.out


def test_without_a_service_it_says_what_is_missing(cli: Cli):
    result = cli("catalog", "get", "1", "--business", BUSINESS)
    assert_clean_failure(result, "CAMPAIGN_BASE_URL")
