"""Opening the ledger runs Alembic only when the schema is behind (issue 32: commands that
read the ledger do not import Alembic): the newest revision from the migrations' names is
Alembic's head, an up-to-date ledger is seen as such, a new or older one is migrated."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from scheduler.ledger.db import alembic_config, make_engine, redact_url
from scheduler.ledger.read_only import LedgerOutOfDate, read_only
from scheduler.ledger.schema_head import at_head, head_revision, known_revisions, open_current


def test_the_newest_migration_file_is_alembics_head(ledger_url: str) -> None:
    from alembic.script import ScriptDirectory

    engine = make_engine(ledger_url)
    try:
        script = ScriptDirectory.from_config(alembic_config(engine))
        assert head_revision() == script.get_current_head()
    finally:
        engine.dispose()


def test_a_new_ledger_is_migrated_and_then_seen_at_head(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'campaign.db'}"  # (a test's PostgreSQL is migrated)
    engine = make_engine(url)
    try:
        assert not at_head(engine)  # nothing there yet
    finally:
        engine.dispose()
    engine = open_current(url)
    try:
        assert at_head(engine)
        assert {"runs", "deliveries"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_ledger_at_an_older_revision_is_not_at_head(ledger_url: str) -> None:
    engine = open_current(ledger_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
        assert not at_head(engine)
    finally:
        engine.dispose()


def test_the_migration_files_are_alembics_revisions_in_order(ledger_url: str) -> None:
    """``campaign validate`` and the rehearsal tell an older ledger from one a newer
    version wrote by these names, without Alembic."""
    from alembic.script import ScriptDirectory

    engine = make_engine(ledger_url)
    try:
        script = ScriptDirectory.from_config(alembic_config(engine))
        oldest_first = [s.revision for s in script.walk_revisions()][::-1]
        assert known_revisions() == oldest_first
    finally:
        engine.dispose()


@pytest.mark.parametrize(("version", "why"), [
    ("0001", "an older schema"),
    ("9999", "a schema this version does not know (a newer campaign wrote it?)")])
def test_a_ledger_not_at_head_is_not_read(ledger_url: str, version: str, why: str) -> None:
    engine = open_current(ledger_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": version})
    finally:
        engine.dispose()
    with pytest.raises(LedgerOutOfDate) as caught, read_only(ledger_url):
        pass
    assert str(caught.value) == (
        f"the ledger at {redact_url(ledger_url)} has {why} (revision {version}; this version "
        f"reads {head_revision()}); it was not read. Any command that writes to it "
        "(campaign plan, run or serve) migrates it first")
