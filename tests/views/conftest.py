"""Fixtures of the views' tests: the project's settings, sandboxes served in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import Settings, load_settings
from scheduler.httpserver import BackgroundServer
from tests.factories import Service, start_service


@pytest.fixture
def settings(tmp_path: Path, ledger_url: str) -> Settings:
    """The settings of an empty project on the test's ledger."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    return load_settings(tmp_path / "config.toml", project_dir=tmp_path,
                         database_url=ledger_url)


@pytest.fixture
def service_factory() -> Iterator[Callable[..., Service]]:
    """Start sandboxes with a given config; all are stopped at the end of the test."""
    servers: list[BackgroundServer] = []

    def start(**config: Any) -> Service:
        service, server = start_service(**config)
        servers.append(server)
        return service

    yield start
    for server in servers:
        server.stop()
