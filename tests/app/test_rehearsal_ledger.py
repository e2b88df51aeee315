"""A rehearsal only reads the configured ledger: a missing one is not created, an existing
one is left as it was (byte for byte on SQLite, rows and schema on PostgreSQL), and one
whose schema is behind is neither migrated nor read (the rehearsal says so)."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, select
from sqlalchemy.engine import make_url

from scheduler.ledger import access
from scheduler.ledger.db import alembic_config, make_engine, open_ledger
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.read_only import schema_head
from scheduler.usecases.rehearsal import rehearse_campaign
from tests.app.support import clean_env
from tests.factories import write_project
from tests.incli import in_process

START = datetime(2027, 3, 8, 12, 0, tzinfo=UTC)
WARMUP = '[senders]\nwarmup = "default"\n'


def _project(tmp_path: Path) -> Path:
    path = write_project(tmp_path, 30, rate="1/s")
    (tmp_path / "config.toml").write_text(WARMUP, encoding="utf-8")
    return path


def _files(url: str) -> dict[str, str]:
    """The SQLite ledger's files (the database, its -wal and -shm) with the SHA-256 of
    their bytes."""
    db = Path(str(make_url(url).database))
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(db.parent.glob(db.name + "*")) if p.is_file()}


def _ledger_state(url: str) -> tuple[object, list[str], list[tuple[object, ...]], int]:
    """What a write would change: schema revision, tables, sender profiles, deliveries."""
    engine = make_engine(url)
    try:
        with access.read(engine, "test: the ledger's state") as conn:
            tables = sorted(inspect(conn).get_table_names())
            revision = conn.exec_driver_sql(
                "SELECT version_num FROM alembic_version").scalar() \
                if "alembic_version" in tables else None
            if "sender_profiles" not in tables:
                return revision, tables, [], 0
            profiles: list[tuple[object, ...]] = [
                tuple(p) for p in spq.profiles(conn, ["s1"]).values()]
            rows = len(conn.execute(select(deliveries.c.id)).all())
            return revision, tables, profiles, rows
    finally:
        engine.dispose()


def test_a_rehearsal_against_a_missing_ledger_file_leaves_no_file(tmp_path: Path) -> None:
    path = _project(tmp_path)
    missing = tmp_path / "nowhere" / "ledger.db"
    result = in_process(clean_env(CAMPAIGN_DATABASE_URL=f"sqlite:///{missing}"), "run",
                        str(path), "--rehearse", "--start", START.isoformat(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Rehearsal of 'lote'" in result.stdout
    assert "s1 warming: day 1 of 8" in result.stdout  # a new sender: no ledger to read
    assert not missing.exists() and not missing.parent.exists()


def test_a_rehearsal_reads_the_ledger_and_leaves_it_as_it_was(
        tmp_path: Path, make_ledger_url, db_backend: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = _project(tmp_path)
    url = make_ledger_url("project")
    engine = open_ledger(url)
    try:  # the project's ledger: s1 is on day 3 of its ramp
        with access.transaction(engine, "test: a warming sender") as conn:
            spq.ensure_profiles(conn, ["s1"], START)
            spq.advance_warm_day(conn, "s1", date(2027, 3, 7), 3)
    finally:
        engine.dispose()
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", url)
    before = _ledger_state(url)
    before_files = _files(url) if db_backend == "sqlite" else {}
    assert db_backend != "sqlite" or list(before_files) == ["project.db"]

    rehearsal = rehearse_campaign(path, start=START)
    warming = [e.what for e in rehearsal.timeline if e.kind == "warming"]
    assert warming[0] == "s1 warming: day 3 of 8, 65 today"  # read from the ledger
    assert rehearsal.notes == []
    assert _ledger_state(url) == before
    if db_backend == "sqlite":  # byte for byte, and no -wal or -shm left behind
        assert _files(url) == before_files

    # another process has it open (its -wal exists): still read, still untouched
    if db_backend == "sqlite":
        holder = open_ledger(url)
        try:
            with holder.connect() as conn:
                conn.exec_driver_sql("SELECT 1 FROM sender_profiles").all()
                held_files = _files(url)
                assert any(name.endswith("-wal") for name in held_files)
                again = rehearse_campaign(path, start=START)
                assert next(e.what for e in again.timeline if e.kind == "warming") == warming[0]
                assert _files(url) == held_files
        finally:
            holder.dispose()


def test_a_rehearsal_neither_migrates_nor_reads_a_ledger_whose_schema_is_behind(
        tmp_path: Path, make_ledger_url, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _project(tmp_path)
    url = make_ledger_url("old", empty=True)
    engine = make_engine(url)
    try:  # a ledger one migration behind
        command.upgrade(alembic_config(engine), "0012")
    finally:
        engine.dispose()
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", url)
    before = _ledger_state(url)
    assert before[0] == "0012" != schema_head()

    rehearsal = rehearse_campaign(path, start=START)
    assert rehearsal.sends == 30
    assert rehearsal.notes == [
        f"the ledger at {url} has an older schema (revision 0012; this version reads "
        f"{schema_head()}); it was not read. Any command that writes to it (campaign plan, "
        "run or serve) migrates it first; every sender starts as new"]
    assert _ledger_state(url) == before  # not migrated


def test_a_rehearsal_creates_no_schema_in_an_empty_database(
        tmp_path: Path, make_ledger_url, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _project(tmp_path)
    url = make_ledger_url("empty", empty=True)
    engine = make_engine(url)  # the database exists (SQLite: an empty file)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").all()
    finally:
        engine.dispose()
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", url)
    rehearsal = rehearse_campaign(path, start=START)
    assert rehearsal.sends == 30 and rehearsal.notes == []
    assert _ledger_state(url) == (None, [], [], 0)
