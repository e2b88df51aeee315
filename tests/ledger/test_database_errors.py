"""A ledger URL that cannot be used is one clear line, with its password hidden."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from scheduler.ledger.db import open_ledger
from scheduler.ledger.exceptions import DatabaseUnavailable


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once closed


def test_an_unreachable_postgresql_server_is_one_line_without_the_password() -> None:
    url = f"postgresql+psycopg://shop:s3cret-pw@127.0.0.1:{_closed_port()}/campaign"
    with pytest.raises(DatabaseUnavailable) as caught:
        open_ledger(url)
    message = str(caught.value)
    assert message.startswith("cannot open postgresql+psycopg://shop:***@127.0.0.1:")
    assert "s3cret-pw" not in message and "\n" not in message
    assert "Connection refused" in message


def test_a_driver_that_is_not_installed_names_the_extra() -> None:
    with pytest.raises(DatabaseUnavailable, match=r"pip install -e '\.\[postgres\]'") as caught:
        open_ledger("postgresql+pg8000://shop:s3cret-pw@127.0.0.1/campaign")
    assert "s3cret-pw" not in str(caught.value)


def test_a_ledger_written_by_a_newer_campaign_is_one_clear_line(tmp_path: Path) -> None:
    """An older install opening a ledger a newer one migrated: no Alembic traceback, one
    line that says which revision it found, which it knows and what to do."""
    import sqlite3

    path = tmp_path / "ledger.db"
    open_ledger(f"sqlite:///{path}").dispose()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(DatabaseUnavailable) as caught:
        open_ledger(f"sqlite:///{path}")
    message = str(caught.value)
    assert "schema is at revision 9999" in message
    assert "upgrade campaign" in message and "\n" not in message



def test_a_ledger_that_cannot_be_opened_is_cannot_open_for_the_read_commands(
        ledger_url: str, db_backend: str, tmp_path: Path) -> None:
    """``campaign status`` where the database cannot be opened (PostgreSQL: the server is
    up but has no such database; SQLite: the path is a folder): one line that says "cannot
    open" with the driver's words, not "cannot migrate", and exit 1."""
    import os

    from tests.incli import campaign

    if db_backend == "postgresql":
        url = ledger_url.rsplit("/", 1)[0] + "/no_such_ledger_db"
        words = 'database "no_such_ledger_db" does not exist'
    else:
        (tmp_path / "a-folder.db").mkdir()
        url, words = f"sqlite:///{tmp_path / 'a-folder.db'}", "unable to open database file"
    env = {**os.environ, "CAMPAIGN_DATABASE_URL": url}
    for command in ("status", "runs", "senders"):
        result = campaign(command, env=env, cwd=tmp_path)
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.startswith(f"error: cannot open {url.split('://')[0]}://")
        assert words in result.stderr and "Traceback" not in result.stderr
