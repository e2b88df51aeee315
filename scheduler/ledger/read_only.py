"""Open a ledger only to read it: never created, never migrated, never written.

``campaign run --rehearse`` promises to touch nothing real, yet reads the project's ledger
(each sender's warm-up day and state, the sessions' labels); ``validate`` and ``preview``
read the labels too. :func:`open_ledger <scheduler.ledger.db.open_ledger>` would create a
missing SQLite file and migrate any ledger, a production PostgreSQL one included.
:func:`read_only` instead:

- answers None when there is no ledger to read: no SQLite file at the path, no PostgreSQL
  database of that name, or a database without the ledger's schema (nothing is created);
- opens SQLite read-only (``mode=ro``); when the ledger has no ``-wal`` file (no process
  has it open: every row is in the main file) also ``immutable=1``, because a read-only
  connection to a WAL database would otherwise leave ``-wal`` and ``-shm`` files behind.
  The file is left byte for byte as it was;
- opens PostgreSQL sessions with ``default_transaction_read_only``: the server refuses any
  write, whatever the code above does;
- raises :class:`LedgerOutOfDate` when the ledger's schema is not the one this version
  reads (older: it has not been migrated yet; or unknown: a newer version wrote it), and
  says how to migrate it, rather than read columns that may not be there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, inspect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from scheduler.ledger import access
from scheduler.ledger.db import redact_url
from scheduler.ledger.exceptions import DatabaseUnavailable, LedgerError
from scheduler.ledger.schema_head import head_revision, known_revisions

#: PostgreSQL's SQLSTATE for a database that does not exist.
_NO_DATABASE = "3D000"


class LedgerOutOfDate(LedgerError):
    """The ledger's schema is not the one this version of campaign reads."""


def schema_head() -> str:
    """The latest schema revision of the packaged migrations (from their file names, see
    :mod:`scheduler.ledger.schema_head`: reading a ledger imports no Alembic)."""
    head = head_revision()
    assert head is not None
    return head


def _sqlite_engine(database: str) -> Engine | None:
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database).expanduser().resolve()
    if not path.is_file():
        return None
    query = {"mode": "ro", "uri": "true"}
    if not path.with_name(path.name + "-wal").exists():
        query["immutable"] = "1"
    url = URL.create("sqlite", database=f"file:{quote(path.as_posix())}", query=query)
    return create_engine(url, poolclass=NullPool, connect_args={"timeout": 30})


def _postgresql_engine(url: str) -> Engine:
    try:
        return create_engine(url, poolclass=NullPool, connect_args={
            "options": "-c default_transaction_read_only=on"})
    except (ImportError, SQLAlchemyError) as exc:
        raise DatabaseUnavailable(f"cannot open {redact_url(url)}: {exc}") from None


def _engine(url: str) -> Engine | None:
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise DatabaseUnavailable(f"database URL is not valid: {redact_url(url)}") from None
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed.database or "")
    return _postgresql_engine(url)


def _version_of(conn: Connection) -> str | None:
    """The revision in ``alembic_version``, as Alembic would read it (None: no such table,
    not a ledger yet)."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    found = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
    return ",".join(sorted(found)) or None


def _revision(engine: Engine, shown: str) -> str | None:
    """The ledger's revision (None: not a ledger yet, or no PostgreSQL database of that
    name). On PostgreSQL one connection both finds the database and reads the revision (a
    new one per connection: the engine pools none)."""
    what = f"read the schema version of the ledger at {shown}"
    if engine.dialect.name != "postgresql":
        with access.read(engine, what) as conn:
            return _version_of(conn)
    try:
        conn = engine.connect()
    except SQLAlchemyError as exc:
        if getattr(getattr(exc, "orig", None), "sqlstate", None) == _NO_DATABASE:
            return None
        raise access.translate(exc, f"read the ledger at {shown}") from None
    try:
        return _version_of(conn)
    except SQLAlchemyError as exc:
        raise access.translate(exc, what) from None
    finally:
        conn.close()


@contextmanager
def read_only(url: str) -> Iterator[Engine | None]:
    """An engine that only reads the ledger at ``url``, or None when there is none (see
    the module); disposed at the end of the block. Raises :class:`LedgerOutOfDate` when the
    ledger's schema is not this version's."""
    engine = _engine(url)
    if engine is None:
        yield None
        return
    try:
        shown = redact_url(url)
        revision = _revision(engine, shown)
        if revision is None:  # a database, but not a ledger (yet)
            yield None
            return
        head = schema_head()
        if revision != head:
            why = ("an older schema" if revision in known_revisions()
                   else "a schema this version does not know (a newer campaign wrote it?)")
            raise LedgerOutOfDate(
                f"the ledger at {shown} has {why} (revision {revision}; this version reads "
                f"{head}); it was not read. Any command that writes to it (campaign plan, "
                f"run or serve) migrates it first")
        yield engine
    finally:
        engine.dispose()


__all__ = ["LedgerOutOfDate", "read_only", "schema_head"]
