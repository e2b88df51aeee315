"""Open the ledger database: engine, SQLite tuning, and Alembic migrations to the latest schema.

SQLite runs in WAL mode with ``synchronous=NORMAL``: a commit survives a killed process
(``kill -9``), which is the crash the dispatcher guards against, and costs no fsync.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from scheduler.ledger.exceptions import DatabaseUnavailable

if TYPE_CHECKING:  # Alembic is imported to migrate (see scheduler.ledger.schema_head)
    from alembic.config import Config

    from scheduler.settings.load import Settings

MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; for SQLite, creates the folder and applies the pragmas."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise DatabaseUnavailable(f"database URL is not valid: {redact_url(url)}") from None
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            try:
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseUnavailable(
                    f"cannot create the folder of {database}: {exc.strerror}"
                ) from None
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    try:
        engine = create_engine(url, **kwargs)
    except ImportError as exc:
        hint = (" (the postgres extra installs psycopg 3: pip install -e '.[postgres]', "
                "and use a postgresql+psycopg:// URL)"
                if parsed.get_backend_name() == "postgresql" else "")
        raise DatabaseUnavailable(f"cannot open {redact_url(url)}: {exc}{hint}") from None
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot open {redact_url(url)}: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def redact_url(url: str) -> str:
    """``url`` as shown to people: its password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # e.g. a port that is not a number
        return "<unparseable URL>"


def ledger_label(settings: Settings) -> str:
    """The ledger as shown to people: its URL without a password, and the project."""
    shown = redact_url(settings.resolved_database_url())
    where = f" (project {settings.project_dir})" if settings.project_dir else ""
    return f"{shown}{where}"


def alembic_config(engine: Engine) -> Config:
    """An Alembic configuration pointing at the packaged migrations and at ``engine``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    config.attributes["engine"] = engine
    return config


def migrate(engine: Engine) -> None:
    """Bring the schema to the latest revision (creates it on a new database)."""
    from alembic import command
    from alembic.util.exc import CommandError

    try:
        command.upgrade(alembic_config(engine), "head")
    except CommandError as exc:  # e.g. a revision a newer campaign wrote
        raise DatabaseUnavailable(_newer_schema(engine, exc)) from None
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(
            f"cannot migrate {redact_url(str(engine.url))}: {one_line(exc)}") from None


def one_line(exc: SQLAlchemyError) -> str:
    """A database error in one line: its class and the driver's words (libpq's are two)."""
    return f"{exc.__class__.__name__}: {' '.join(str(getattr(exc, 'orig', exc)).split())}"


def first_connection(engine: Engine) -> Connection:
    """A connection to the ledger, or :class:`DatabaseUnavailable` when the database cannot
    be opened at all (a server down, a database that does not exist, a login refused):
    "cannot open", not "cannot migrate", whose words would send people to the schema."""
    try:
        return engine.connect()
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(
            f"cannot open {redact_url(str(engine.url))}: {one_line(exc)}") from None


def _newer_schema(engine: Engine, exc: Exception) -> str:
    """One line for a ledger whose schema revision this version does not know."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    found = " ".join(str(exc).split())
    try:
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
            found = "revision " + ", ".join(versions)
    except SQLAlchemyError:
        pass
    return (f"cannot migrate {redact_url(str(engine.url))}: its schema is at {found}, which "
            f"this version of campaign does not know (it knows up to {head}); "
            "a newer campaign wrote it: upgrade campaign to open this ledger")


def open_ledger(url: str) -> Engine:
    """Open (and create or migrate) the ledger at ``url``."""
    engine = make_engine(url)
    first_connection(engine).close()
    migrate(engine)
    return engine
