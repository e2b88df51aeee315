"""Workers harness: ``pg_url`` (a fresh PostgreSQL ledger; the test is skipped on the
SQLite pass, where a second worker is refused), ``workers`` (starts ``campaign serve``
processes, all stopped after the test). Builders are in ``tests/workers/support.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.workers.support import WorkerPool


@pytest.fixture
def pg_url(ledger_url: str, db_backend: str) -> str:
    """The URL of a fresh PostgreSQL ledger (skips the test on the SQLite pass)."""
    if db_backend != "postgresql":
        pytest.skip("several workers need PostgreSQL (SQLite refuses a second one)")
    return ledger_url


@pytest.fixture
def workers() -> Iterator[WorkerPool]:
    """``campaign serve`` worker processes of one test; stopped (or reaped) after it."""
    pool = WorkerPool()
    yield pool
    pool.close()
