"""Fixtures of the sender tests: a project folder whose commands use the test's ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import command_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger_url: str) -> Path:
    """The working folder of a project on the test's ledger: no configured service (the
    embedded sandbox answers), 80 columns, no colour."""
    command_project(tmp_path, monkeypatch, ledger_url)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path
