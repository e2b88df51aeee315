"""``campaign templates``: a cloud_api connection and its templates, as a user runs it.

The sandbox runs in its own process (shared by this module); every command runs in a
subprocess pointed at it by ``CAMPAIGN_BASE_URL`` / ``CAMPAIGN_API_KEY``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sessions.support import Cli, SandboxProcess
from tests.sessions.test_catalog_cli import assert_clean_failure, connected_session

TOKEN = "EAAG-cli-secret-token-42"
CONNECTION = "oficial-cli"


@pytest.fixture(scope="module")
def official(sandbox_process: SandboxProcess) -> SandboxProcess:
    """The sandbox process with a QR session ``balcao`` (not cloud_api)."""
    connected_session(sandbox_process, "balcao")
    return sandbox_process


def test_connect_list_create_and_delete(cli: Cli, service_env: dict[str, str],
                                        official: SandboxProcess) -> None:
    env = {**service_env, "CAMPAIGN_CLOUD_API_TOKEN": TOKEN}
    connected = cli("templates", "connect", CONNECTION, "--phone-number-id", "1234567",
                    "--business-account-id", "7654321", env=env)
    assert connected.code == 0, connected.both
    assert connected.out.strip() == f"connected {CONNECTION} (cloud_api, status connected)"
    assert TOKEN not in connected.both
    empty = cli("templates", "list", CONNECTION, env=service_env)
    assert empty.code == 0 and "has no templates" in empty.out
    made = cli("templates", "create", CONNECTION, "pedido_enviado", "-l", "pt_BR",
               "--body", "Olá {{1}}, pedido {{2}} enviado", "--category", "utility",
               env=service_env)
    assert made.code == 0, made.both
    assert "2 body variable(s), APPROVED" in made.out
    table = cli("templates", "list", CONNECTION, env=service_env)
    assert table.code == 0, table.both
    row = next(line for line in table.out.splitlines() if "pedido_enviado" in line)
    cells = row.replace("│", " ").split()
    assert cells[:5] == ["pedido_enviado", "pt_BR", "UTILITY", "2", "APPROVED"]
    listed = cli("templates", "list", CONNECTION, "--json", env=service_env)
    [item] = json.loads(listed.out)
    assert (item["name"], item["language"], item["variables"]) == ("pedido_enviado", "pt_BR", 2)
    again = cli("templates", "create", CONNECTION, "pedido_enviado", "-l", "pt_BR",
                "--body", "Outro {{1}}", env=service_env)
    assert_clean_failure(again, "already exists", CONNECTION)
    deleted = cli("templates", "delete", CONNECTION, "pedido_enviado", "--json",
                  env=service_env)
    assert deleted.code == 0, deleted.both
    assert json.loads(deleted.out)["template"]["name"] == "pedido_enviado"
    assert json.loads(cli("templates", "list", CONNECTION, "--json", env=service_env).out) == []


def test_clear_errors(cli: Cli, service_env: dict[str, str], official: SandboxProcess) -> None:
    no_token = cli("templates", "connect", "outra", "--phone-number-id", "1234567",
                   "--business-account-id", "7654321", env=service_env)
    assert_clean_failure(no_token, "CAMPAIGN_CLOUD_API_TOKEN")
    qr = cli("templates", "list", "balcao", env=service_env)
    assert_clean_failure(qr, "only available on cloud_api connections", "balcao")
    bad = cli("templates", "create", "balcao", "promo", "-l", "pt_BR", "--body",
              "Olá {{2}}", env=service_env)
    assert_clean_failure(bad, "{{1}} to {{2}}")


def test_an_unreadable_option_file_is_named(cli: Cli, service_env: dict[str, str],
                                            official: SandboxProcess, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.txt"
    no_body = cli("templates", "create", CONNECTION, "promo", "-l", "pt_BR",
                  "--body-file", str(missing), env=service_env)
    assert_clean_failure(no_body, "--body-file", str(missing), "cannot read it")
    no_token = cli("templates", "connect", "outra", "--phone-number-id", "1234567",
                   "--business-account-id", "7654321", "--token-file", str(missing),
                   env=service_env)
    assert_clean_failure(no_token, "--token-file", str(missing), "cannot read it")
