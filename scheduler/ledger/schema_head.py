"""Open the ledger with Alembic only when its schema is behind: the newest revision read
from the migrations' file names, the ledger's from its ``alembic_version`` table.

Every command that reads the ledger opens it (``campaign status``, ``runs``, ``senders``), and
nearly always its schema is already the newest; Alembic (with Mako and Pygments) is a
quarter of such a command's start-up, so it is imported only to migrate
(:func:`scheduler.ledger.db.migrate`).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from scheduler.ledger.db import first_connection, make_engine, migrate

#: The migrations: ``NNNN_what.py``, each with ``revision = "NNNN"`` (a test checks the
#: newest against Alembic's head).
VERSIONS = Path(__file__).parent / "migrations" / "versions"


def known_revisions() -> list[str]:
    """Every migration's revision, oldest first (a test checks them against Alembic's)."""
    return sorted(path.name[:4] for path in VERSIONS.glob("[0-9][0-9][0-9][0-9]_*.py"))


def head_revision() -> str | None:
    """The newest migration's revision (None: no migration found)."""
    numbers = known_revisions()
    return numbers[-1] if numbers else None


def at_head(engine: Engine) -> bool:
    """Whether the ledger's schema is the newest (False for a new ledger, one behind or one
    whose version cannot be read); :class:`DatabaseUnavailable` ("cannot open") when the
    database cannot be connected to at all."""
    head = head_revision()
    if head is None:
        return False
    conn = first_connection(engine)
    try:
        with conn:
            found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
            return list(found) == [head]
    except SQLAlchemyError:  # no table yet (a new ledger): Alembic creates it
        return False


def open_current(url: str) -> Engine:
    """:func:`scheduler.ledger.db.open_ledger`, which migrates only a ledger that is behind."""
    engine = make_engine(url)
    if not at_head(engine):
        migrate(engine)
    return engine
