"""Fixtures of the WhatsApp call tests: a throw-away project (campaigns/, templates/, data/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.ledger.runs import Ledger
from tests.factories import Project, open_test_ledger


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project root in a temporary folder."""
    return Project.empty(tmp_path)


@pytest.fixture
def tledger_calls(ledger_url: str) -> Iterator[Ledger]:
    """A fresh ledger (SQLite file, or PostgreSQL on that pass) on the real clock."""
    with open_test_ledger(ledger_url) as opened:
        yield opened
