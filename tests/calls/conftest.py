"""Fixtures of the WhatsApp call tests: a throw-away project (campaigns/, templates/, data/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project root in a temporary folder."""
    for folder in ("campaigns", "templates", "data"):
        (tmp_path / folder).mkdir()
    return Project(tmp_path)
