"""Fixtures of the dispatcher tests: sandboxes served in this process (``Service``).

The ledger (``ledger``) and the simulated clock (``clock``) are the shared fixtures of
``tests/conftest.py``; runs and projects come from ``tests/factories.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scheduler.httpserver import BackgroundServer
from tests.factories import Service, start_service


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
