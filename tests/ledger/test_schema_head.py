"""Opening the ledger runs Alembic only when the schema is behind (issue 32: commands that
read the ledger do not import Alembic): the newest revision from the migrations' names is
Alembic's head, an up-to-date ledger is seen as such, a new or older one is migrated."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, text

from scheduler.ledger.db import alembic_config, make_engine
from scheduler.ledger.schema_head import at_head, head_revision, open_current


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
