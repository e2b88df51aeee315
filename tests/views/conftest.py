"""Fixtures of the views' tests: the project's settings, sandboxes served in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.settings.load import Settings, load_settings


@pytest.fixture
def settings(tmp_path: Path, ledger_url: str) -> Settings:
    """The settings of an empty project on the test's ledger."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    return load_settings(tmp_path / "config.toml", project_dir=tmp_path,
                         database_url=ledger_url)
