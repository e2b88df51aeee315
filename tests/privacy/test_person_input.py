"""``campaign person``'s bad input: a value that is no phone number, a blank reason, or a
refused confirmation is said in one line, exit 1, nothing changed and nothing recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from scheduler.ledger.runs import Ledger
from tests.factories import command_project, make_run, number
from tests.incli import campaign
from tests.privacy.support import scan


def test_bad_input_changes_nothing(ledger: Ledger, ledger_url: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    command_project(tmp_path, monkeypatch, ledger_url)
    make_run(ledger, 2)
    person = number(1)
    for args, said in ((["forget", "12ab", "--reason", "x", "--yes"], "not a phone number"),
                       (["export", "abc"], "not a phone number"),
                       (["forget", person, "--reason", "  ", "--yes"], "--reason")):
        out = campaign("person", *args)
        assert out.returncode == 1, (args, out.stdout)
        assert said in out.stderr and "Traceback" not in out.stderr
    refused = campaign("person", "forget", person, "--reason", "pedido", stdin="n\n")
    assert refused.returncode == 1
    assert scan(ledger_url, [person])  # still there
    with ledger.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM privacy_audit")).scalar_one() == 0
    assert not (tmp_path / "state" / "erasure.key").exists()
