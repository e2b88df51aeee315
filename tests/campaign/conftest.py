"""Fixtures for campaign tests: a throw-away project (campaigns/, templates/, data/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project root in a temporary folder."""
    return Project.empty(tmp_path)
