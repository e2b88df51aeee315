"""Where a test's ledger lives: an SQLite file, or a fresh PostgreSQL database.

The suite runs once per database. ``CAMPAIGN_TEST_DATABASE_URL`` (or ``pytest
--database-url``) names a PostgreSQL server by a URL to its admin database, e.g.
``postgresql+psycopg://postgres@127.0.0.1:5432/postgres`` (``scripts/pg-test-server run``
starts one and sets it); then every ledger a test opens is a database of its own on that
server, copied from a template migrated once per session and dropped after the test.
Unset, every ledger is an SQLite file in the test's ``tmp_path``, likewise a copy of a file
migrated once per session (a fresh migration costs a few tenths of a second; a copy, well
under a millisecond). Tests of the migrations themselves ask for an ``empty`` ledger.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import Pool

from scheduler.ledger.db import open_ledger

#: The environment variable naming the PostgreSQL server of the second pass.
ENV = "CAMPAIGN_TEST_DATABASE_URL"


#: Every driver connection opened on the PostgreSQL pass (see :meth:`LedgerUrls._close_left`).
_CONNECTIONS: weakref.WeakSet[Any] = weakref.WeakSet()


def _track(dbapi_connection: Any, _record: Any) -> None:
    if type(dbapi_connection).__module__.startswith("psycopg"):  # not SQLite's (no weakref)
        _CONNECTIONS.add(dbapi_connection)


class LedgerUrls:
    """Hands out one isolated ledger URL per request, on SQLite or on a PostgreSQL server."""

    def __init__(self, server_url: str | None) -> None:
        self.server_url = server_url or None
        self.backend = "sqlite"
        self._admin: Engine | None = None
        self._template: str | None = None
        self._sqlite_template: Path | None = None
        self._created: list[str] = []
        self._lasting: list[str] = []
        self._names = itertools.count(1)
        if self.server_url is not None:
            url = make_url(self.server_url)
            if url.get_backend_name() != "postgresql":
                raise ValueError(f"{ENV} must be a postgresql URL, got {url.drivername}")
            self.backend = "postgresql"
            event.listen(Pool, "connect", _track)

    def describe(self) -> str:
        """One line for the test report's header."""
        if self.server_url is None:
            return "ledger databases: SQLite files (set CAMPAIGN_TEST_DATABASE_URL for PostgreSQL)"
        shown = make_url(self.server_url).render_as_string(hide_password=True)
        return f"ledger databases: PostgreSQL at {shown}, a fresh database per ledger"

    # ------------------------------------------------------------------ SQLite

    def _migrated_file(self) -> Path:
        """An SQLite file holding the migrated schema (closed, its WAL checkpointed into
        it); each ledger is a copy of it."""
        if self._sqlite_template is None:
            path = Path(tempfile.mkdtemp(prefix="campaign-template-")) / "template.db"
            engine = open_ledger(f"sqlite:///{path}")
            engine.dispose()  # the last connection's close folds the WAL into the file
            self._sqlite_template = path
        return self._sqlite_template

    # ------------------------------------------------------------------ PostgreSQL

    def _admin_engine(self) -> Engine:
        if self._admin is None:
            assert self.server_url is not None
            self._admin = create_engine(self.server_url, isolation_level="AUTOCOMMIT",
                                        pool_size=1)
        return self._admin

    def _url_of(self, database: str) -> str:
        assert self.server_url is not None
        return make_url(self.server_url).set(database=database).render_as_string(
            hide_password=False)

    def _create(self, name: str, template: str) -> None:
        with self._admin_engine().connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}" '
                              "STRATEGY FILE_COPY"))

    def _migrated_template(self) -> str:
        """A database holding the migrated schema; each ledger is a copy of it."""
        if self._template is None:
            name = f"campaign_template_{os.getpid()}"
            self._drop(name)
            self._create(name, "template0")
            engine = open_ledger(self._url_of(name))
            engine.dispose()  # a template must have no open sessions when copied
            self._template = name
        return self._template

    def _drop(self, name: str) -> None:
        self._close_left(name)
        with self._admin_engine().connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    @staticmethod
    def _close_left(database: str) -> None:
        """Close the connections to ``database`` still open in this process.

        A test (or the code it calls) that never disposes its engine leaves pooled
        connections behind; SQLite's are closed quietly by the garbage collector, psycopg
        warns (``ResourceWarning``, an error here) at whatever later test collects them.
        """
        for connection in list(_CONNECTIONS):
            if not connection.closed and connection.info.dbname == database:
                connection.close()

    # ------------------------------------------------------------------ the API

    def new(self, folder: Path, name: str = "ledger", *, empty: bool = False,
            copy_of: str | None = None, lasting: bool = False) -> str:
        """A URL of a ledger nobody else uses: ``folder/<name>.db``, or a new PostgreSQL
        database, migrated unless ``empty``. ``copy_of``: a copy of that ledger (closed).
        A PostgreSQL database is dropped after the test, or at the end of the session when
        ``lasting`` (for module-scoped fixtures)."""
        if self.server_url is None:
            path = folder / f"{name}.db"
            if copy_of is not None:
                shutil.copy(make_url(copy_of).database or "", path)
            elif not empty:
                shutil.copy(self._migrated_file(), path)
            return f"sqlite:///{path}"
        database = f"campaign_test_{os.getpid()}_{next(self._names)}"
        if copy_of is not None:
            template = make_url(copy_of).database or ""
        else:
            template = "template0" if empty else self._migrated_template()
        self._create(database, template)
        (self._lasting if lasting else self._created).append(database)
        return self._url_of(database)

    def drop_created(self) -> None:
        """Drop the databases handed out since the last call (end of a test)."""
        while self._created:
            self._drop(self._created.pop())

    def close(self) -> None:
        """Drop everything this session created (end of the session)."""
        if self.server_url is None:
            if self._sqlite_template is not None:
                shutil.rmtree(self._sqlite_template.parent, ignore_errors=True)
            return
        self.drop_created()
        self._created = self._lasting
        self.drop_created()
        if self._template is not None:
            self._drop(self._template)
        if self._admin is not None:
            self._admin.dispose()
