"""Fixtures for ledger tests: a real ledger per test (SQLite or PostgreSQL), fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.fixture
def ledger(ledger_url: str) -> Ledger:
    """A migrated ledger (an SQLite file, or PostgreSQL on that pass), clock fixed at T0."""
    engine = open_ledger(ledger_url)
    yield Ledger(engine, clock=lambda: T0)
    engine.dispose()


def plan_rows(n: int, *, steps: int = 1, skip: set[int] | None = None) -> list[dict]:
    """Plan rows for ``n`` recipients with ``steps`` steps each."""
    rows = []
    for i in range(n):
        for step in range(steps):
            skipped = skip is not None and i in skip
            rows.append({
                "row": i + 1, "to": f"55119{i:08d}", "step": step, "kind": "text",
                "path": "/api/v1/messages/send/text", "payload": {"text": f"olá {i}"},
                "variables": {"nome": f"Ana {i}"}, "region": "BR",
                "state": "skipped" if skipped else "planned",
                "reason": "duplicate" if skipped else None,
            })
    return rows
