"""Fixtures of the tracked-link tests: a project whose settings file a test writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import Project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """An empty project (campaigns/, templates/, data/) whose settings are its
    ``config.toml`` (empty: no service, no public address) whatever the caller's env."""
    for name in ("CAMPAIGN_BASE_URL", "CAMPAIGN_API_KEY", "CAMPAIGN_WEBHOOK_URL",
                 "CAMPAIGN_PROJECT_DIR", "CAMPAIGN_DATABASE_URL", "CAMPAIGN_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "project"
    root.mkdir()
    made = Project.empty(root)
    made.write("config.toml", "")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(root / "config.toml"))
    return made
