"""Alembic environment: runs migrations on the engine handed over by ``ledger.db``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import scheduler.ledger.models  # noqa: F401  (registers the tables)

target_metadata = SQLModel.metadata
config = context.config


def run_migrations_offline() -> None:
    """Emit SQL without a connection."""
    context.configure(url=config.get_main_option("sqlalchemy.url"),
                      target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on the engine from ``ledger.db`` (or the configured URL)."""
    engine = config.attributes.get("engine") or create_engine(
        config.get_main_option("sqlalchemy.url") or ""
    )
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
