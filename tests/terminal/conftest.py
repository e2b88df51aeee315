"""Fixtures of the terminal tests: what a command sees in a plain 80-column terminal."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def terminal_80(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ledger_url: str) -> None:
    """80 columns, no colour, no configured service, the test's ledger."""
    for key in ("CAMPAIGN_BASE_URL", "CAMPAIGN_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", ledger_url)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
