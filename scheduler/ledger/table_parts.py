"""What the ledger's tables are declared with: :class:`LedgerTable`, their base (and
:class:`RunTable`, Run's), and :class:`PartialIndex`, an index over the rows matching a
predicate.

They keep reading the ledger cheap (issue 32: ``campaign status`` imports every table of
the ledger and uses a few). A table's pydantic validator is built when first used, not at
import: a table model is made from rows without validation (``Run(**row)``), so most
commands never use one. A partial index's options for a database are made when that
database asks for them: spelled ``Index(..., postgresql_where=...)``, SQLAlchemy imports
the PostgreSQL dialect (with the modules of its four drivers) to check the argument, on a
SQLite ledger too.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Index, text
from sqlalchemy.orm import registry
from sqlalchemy.util import memoized_property
from sqlmodel import SQLModel
from sqlmodel.main import SQLModelConfig

#: The databases a partial index holds its predicate for, unless told otherwise.
BOTH = ("sqlite", "postgresql")


class LedgerTable(SQLModel):
    """The base of the ledger's tables (``class Run(LedgerTable, table=True)``): a table as
    SQLModel makes it, its pydantic schema built on first validation (``defer_build``)."""

    model_config = SQLModelConfig(defer_build=True)


class RunTable(LedgerTable, registry=registry(metadata=SQLModel.metadata)):
    """The base of :class:`~scheduler.ledger.models.Run` alone: its ORM mapper in a registry
    of its own, its table in the ledger's metadata as every other. SQLAlchemy configures
    every mapper of a registry when the first instance of any is made; the readers
    (``status``, ``runs``, ``senders``) make runs and no other table's rows, and configured
    the ledger's 21 mappers for them (~10 ms of CPU; Run's alone: ~2 ms). The tables have no
    ``relationship()``: one to or from Run would name the other class itself, not its name
    (a name is looked up in its own registry)."""


class _Options(dict[str, Any]):
    """``PartialIndex.dialect_options``: each database's options made when first asked for,
    the predicate among them for the databases of :attr:`PartialIndex.where_dialects`."""

    def __init__(self, index: PartialIndex) -> None:
        super().__init__()
        self._index = index

    def __missing__(self, dialect: str) -> Any:
        options = self._index._kw_reg_for_dialect_cls(dialect)  # loads that dialect
        if dialect in self._index.where_dialects:
            options["where"] = text(self._index.where)
        self[dialect] = options
        return options


class PartialIndex(Index):
    """``Index(name, *columns, unique=…)`` over the rows matching ``where`` (SQL text, the
    same on every database of ``dialects``); the index of every other database is whole.

    ``index.dialect_options["postgresql"]["where"]`` is the predicate as with a plain
    ``Index(..., postgresql_where=text(where))``, read when PostgreSQL's DDL compiler, Alembic
    or a test asks for it; ``dialect_kwargs`` lists every database's (it loads them)."""

    def __init__(self, name: str, *columns: str, where: str,
                 dialects: tuple[str, ...] = BOTH, unique: bool = False) -> None:
        self.where = where
        self.where_dialects = dialects
        super().__init__(name, *columns, unique=unique)

    @memoized_property
    def dialect_options(self) -> Any:
        """Each database's options, made on first ask (:class:`_Options`)."""
        return _Options(self)

    @property
    def dialect_kwargs(self) -> Any:
        """``<dialect>_<option>`` of every database the predicate is for, as with a plain
        Index given them (Alembic renders and copies an index from these)."""
        for dialect in self.where_dialects:
            self.dialect_options[dialect]
        return super().dialect_kwargs
