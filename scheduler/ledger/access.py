"""The one way into the database: a transaction or a read, with database errors translated.

Every package outside the ledger reaches the database like this::

    from scheduler.ledger import access

    with access.transaction(ledger.engine, "claim deliveries") as conn:  # commits or not
        moved = dq.claim(conn, picked, now)
    with access.read(ledger.engine, "count deliveries") as conn:         # no commit
        counts = dq.counts_by_state(conn, run_id)

and hands ``conn`` only to functions of :mod:`scheduler.ledger.queries`. The scopes here
are the only place where database errors (SQLAlchemy's, and the driver's own from the
SQLite and ``COPY`` fast paths) become :class:`~scheduler.ledger.exceptions.LedgerError`:
one line, ``could not <what>: <error class>: <the database's words>``, never the SQL text or
its parameters. Other errors raised inside a scope (a :class:`ServiceError`, Ctrl-C) roll
the transaction back and pass through unchanged.

The scopes are small classes rather than ``@contextmanager`` generators because the
dispatcher opens several per loop turn (figure P2 counts every microsecond of it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from scheduler.ledger.exceptions import DatabaseUnavailable, LedgerError

__all__ = [
    "Connection",
    "Engine",
    "Scope",
    "database_errors",
    "guard",
    "read",
    "savepoint",
    "session",
    "snapshot",
    "transaction",
    "translate",
]


def database_errors(engine: Engine) -> tuple[type[BaseException], ...]:
    """The exceptions that mean "the database failed": SQLAlchemy's and the driver's."""
    dbapi = engine.dialect.loaded_dbapi
    return (SQLAlchemyError, dbapi.Error)


def _one_line(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc  # the driver's error, without SQL or params
    # PostgreSQL's full text quotes the statement ("LINE 1: SELECT …"); its primary message
    # is the sentence alone
    primary = getattr(getattr(cause, "diag", None), "message_primary", None)
    return f"{type(cause).__name__}: {' '.join(str(primary or cause).split())}"


def translate(exc: BaseException, what: str) -> LedgerError:
    """A database error as a one-line :class:`LedgerError` saying what could not be done."""
    return LedgerError(f"could not {what}: {_one_line(exc)}")


class Scope:
    """A connection to the ledger for one ``with`` block; see the module doc.

    ``write``: the block is one transaction, committed when it ends normally and rolled back
    otherwise. ``snapshot``: every statement of the block sees the same state of the
    database (``REPEATABLE READ`` on PostgreSQL; an explicit ``BEGIN`` on SQLite, whose
    driver would otherwise run each read on its own).
    """

    __slots__ = ("_conn", "_engine", "_errors", "_snapshot", "_what", "_write")

    def __init__(self, engine: Engine, what: str, *, write: bool,
                 snapshot: bool = False) -> None:
        self._engine = engine
        self._what = what
        self._write = write
        self._snapshot = snapshot
        self._errors = database_errors(engine)
        self._conn: Connection | None = None

    def __enter__(self) -> Connection:
        try:
            conn = self._engine.connect()
        except self._errors as exc:
            raise DatabaseUnavailable(f"could not {self._what}: the database cannot be "
                                      f"reached: {_one_line(exc)}") from None
        try:
            if self._snapshot and conn.dialect.name == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            if self._write or self._snapshot:
                conn.begin()
            if self._snapshot and conn.dialect.name == "sqlite":
                # Python's sqlite3 opens no transaction before a SELECT: without this BEGIN
                # each read would see the latest commit (a run's counts from one moment,
                # its funnel from the next); in WAL mode a reader blocks no writer
                conn.exec_driver_sql("BEGIN")
        except self._errors as exc:
            conn.close()
            raise translate(exc, self._what) from None
        self._conn = conn
        return conn

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        conn, self._conn = self._conn, None
        assert conn is not None
        try:
            if self._write and conn.in_transaction():  # a read's is rolled back by close()
                if error is None:
                    conn.commit()
                else:
                    conn.rollback()
        except self._errors as exc:
            error = error if error is not None else exc
        finally:
            with contextlib.suppress(*self._errors):  # broken: the pool drops it
                conn.close()
        if error is not None and isinstance(error, self._errors):
            raise translate(error, self._what) from None


def transaction(engine: Engine, what: str = "write to the ledger") -> Scope:
    """One transaction on ``engine``: committed at the end of the block, else rolled back."""
    return Scope(engine, what, write=True)


def read(engine: Engine, what: str = "read the ledger") -> Scope:
    """A connection for reads on ``engine``; nothing is committed."""
    return Scope(engine, what, write=False)


def snapshot(engine: Engine, what: str = "read the ledger") -> Scope:
    """Reads that all see the same state of the ledger (a report made while a run sends)."""
    return Scope(engine, what, write=False, snapshot=True)


def savepoint(conn: Connection) -> Any:
    """``with savepoint(conn):`` a nested transaction: an error inside rolls back only the
    block (the receiver applies a failing batch again event by event this way)."""
    return conn.begin_nested()


@contextmanager
def guard(engine: Engine, what: str) -> Iterator[None]:
    """Translate the database errors raised inside the block (for ORM sessions and other
    work that opens its own connections)."""
    errors = database_errors(engine)
    try:
        yield
    except errors as exc:
        raise translate(exc, what) from None


@contextmanager
def session(engine: Engine, what: str) -> Iterator[Session]:
    """An ORM session whose objects stay readable after it closes; errors translated.

    Nothing is committed unless the block calls ``session.commit()``.
    """
    with guard(engine, what), Session(engine, expire_on_commit=False) as orm:
        yield orm
