"""API tokens: made with a recognisable prefix, shown once, stored as SHA-256 only; listed
and revoked by name; ``campaign api`` refuses another address than loopback while none
exists, serves on loopback, and prints a valid OpenAPI 3.1 document; none of it imports
FastAPI until the API is served."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from scheduler.core.errors import SchedulerError
from scheduler.ledger.api_tokens import (
    api_tokens,
    authenticate,
    create_token,
    list_tokens,
    revoke_token,
)
from scheduler.ledger.runs import Ledger
from tests.app.support import CAMPAIGN, clean_env, cli
from tests.factories import T0, make_run
from tests.incli import in_process
from tests.terminal.test_start_imports import heavy_among, imported_by


def test_a_token_is_shown_once_and_only_its_hash_is_stored(ledger: Ledger) -> None:
    token = create_token(ledger.engine, "crm", "operator", T0,
                         random_bytes=lambda n: bytes(range(n)))
    assert token == "cmp_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    with ledger.engine.connect() as conn:
        (row,) = conn.execute(select(api_tokens)).all()
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert all(token not in str(value) and token[4:20] not in str(value) for value in row)
    info = authenticate(ledger.engine, token, T0)
    assert info is not None and (info.name, info.role) == ("crm", "operator")
    for wrong in ("", token[:-1], token + "x", token.upper(), "cmp_" + "A" * 43, "x" * 10_000):
        assert authenticate(ledger.engine, wrong, T0) is None
    revoke_token(ledger.engine, "crm", T0)
    assert authenticate(ledger.engine, token, T0) is None
    (listed,) = list_tokens(ledger.engine)
    assert listed.revoked and listed.last_used_at == T0


def test_names_roles_and_revoking_are_checked(ledger: Ledger) -> None:
    create_token(ledger.engine, "crm", "viewer", T0)
    with pytest.raises(SchedulerError, match="named 'crm' exists already"):
        create_token(ledger.engine, "crm", "operator", T0)
    with pytest.raises(SchedulerError, match="a role is viewer or operator"):
        create_token(ledger.engine, "ops", "admin", T0)
    with pytest.raises(SchedulerError, match="token name"):
        create_token(ledger.engine, "a b", "viewer", T0)
    with pytest.raises(SchedulerError, match="no API token named 'nope'"):
        revoke_token(ledger.engine, "nope", T0)
    assert [t.name for t in list_tokens(ledger.engine)] == ["crm"]


#: This working tree, first on the path of the commands these tests start (whatever copy
#: the virtualenv's editable install points at).
REPO = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def project(tmp_path: Path, ledger_url: str) -> tuple[Path, dict[str, str]]:
    (tmp_path / "config.toml").write_text("")
    return tmp_path, clean_env(CAMPAIGN_DATABASE_URL=ledger_url, PYTHONPATH=REPO)


def test_the_commands_create_list_and_revoke(project: tuple[Path, dict[str, str]],
                                             ledger: Ledger) -> None:
    root, env = project
    made = in_process(env, "api-token", "create", "crm", "--role", "viewer", cwd=root)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("cmp_") and len(token) == 47
    assert "shown this once" in made.stderr and token not in made.stderr
    assert authenticate(ledger.engine, token, T0) is not None
    listed = in_process(env, "api-token", "list", "--json", cwd=root)
    (row,) = json.loads(listed.stdout)["tokens"]
    assert (row["name"], row["role"], row["revoked"]) == ("crm", "viewer", None)
    shown = in_process(env, "api-token", "list", cwd=root).stdout
    assert "crm" in shown and "viewer" in shown and token not in shown
    assert in_process(env, "api-token", "revoke", "crm", cwd=root).returncode == 0
    assert json.loads(in_process(env, "api-token", "list", "--json", cwd=root).stdout)[
        "tokens"][0]["revoked"]
    refused = in_process(env, "api-token", "create", "crm", "--role", "viewer", cwd=root)
    assert refused.returncode == 1 and "exists already" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_another_address_than_loopback_needs_a_token(project: tuple[Path, dict[str, str]],
                                                      ledger: Ledger) -> None:
    root, env = project
    refused = cli(env, "api", "--host", "0.0.0.0", "--port", "0", cwd=root)
    assert refused.returncode == 1
    assert "no API token exists" in refused.stderr and "Traceback" not in refused.stderr


def test_campaign_api_serves_on_loopback(project: tuple[Path, dict[str, str]],
                                         ledger: Ledger) -> None:
    root, env = project
    run_id = make_run(ledger, 3)
    token = create_token(ledger.engine, "crm", "viewer", T0)
    server = subprocess.Popen([*CAMPAIGN, "api", "--port", "0"], cwd=root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("API at http://127.0.0.1:"), line + server.stderr.read()
        base = line.split()[2]
        answer = httpx.get(f"{base}/runs/{run_id}", timeout=30,
                           headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200 and answer.json()["counts"] == {"planned": 3}
        assert httpx.get(f"{base}/runs", timeout=30).status_code == 401
    finally:
        os.kill(server.pid, signal.SIGINT)
        out, err = server.communicate(timeout=30)
    assert token not in out + err


def test_the_openapi_document_is_valid_openapi_3_1(project: tuple[Path, dict[str, str]]
                                                   ) -> None:
    from openapi_spec_validator import validate

    root, env = project
    printed = cli(env, "api", "--openapi", cwd=root)
    assert printed.returncode == 0, printed.stderr
    doc = json.loads(printed.stdout)
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) >= {"/api/v1/runs", "/api/v1/runs/{run_id}",
                                 "/api/v1/runs/{run_id}/pause", "/api/v1/senders",
                                 "/api/v1/suppressions", "/api/v1/suppressions/{number}"}


def test_the_token_commands_import_no_server(ledger: Ledger, ledger_url: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", REPO)
    printed, modules = imported_by(["api-token", "list"], tmp_path, ledger_url)
    assert "no API tokens" in printed
    assert "scheduler.commands.api" in modules
    assert heavy_among(modules) == []


def test_the_migration_goes_back_and_forth(ledger_url: str) -> None:
    from alembic import command
    from sqlalchemy import inspect

    from scheduler.ledger.db import alembic_config, open_ledger

    engine = open_ledger(ledger_url)
    try:
        token = create_token(engine, "crm", "viewer", T0)
        config = alembic_config(engine)
        command.downgrade(config, "0014")
        assert "api_tokens" not in inspect(engine).get_table_names()
        command.upgrade(config, "head")
        assert list_tokens(engine) == [] and authenticate(engine, token, T0) is None
    finally:
        engine.dispose()


def test_serve_serves_the_api_on_its_own_port_when_the_setting_says_so(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    from scheduler.commands.api import serve_alongside
    from scheduler.core.errors import ConfigError
    from tests.api.support import project_settings

    settings = project_settings(tmp_path, ledger_url, "receiver_port = 8799\n")
    with serve_alongside(settings, ledger) as address:
        assert address is None  # off unless [api] serve = true
    settings = project_settings(tmp_path, ledger_url,
                                "receiver_port = 8799\n[api]\nserve = true\nport = 0\n")
    with serve_alongside(settings, ledger) as address:
        assert address is not None and address.startswith("http://127.0.0.1:")
        assert httpx.get(f"{address}/runs", timeout=30).status_code == 401
    on_receiver = project_settings(tmp_path, ledger_url,
                                   "receiver_port = 8799\n[api]\nserve = true\nport = 8799\n")
    with pytest.raises(ConfigError, match="webhook receiver's"), \
            serve_alongside(on_receiver, ledger):
        pass
