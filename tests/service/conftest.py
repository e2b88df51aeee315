"""Fixtures of the client tests: the scriptable server (``tests/service/support.py``) reset
for each test, a closed port, the key, and each transport."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.service.support import API_KEY, Scripted


@pytest.fixture(scope="session")
def _scripted_server() -> Iterator[Scripted]:
    server = Scripted()
    yield server
    server.server.stop()


@pytest.fixture
def scripted(_scripted_server: Scripted) -> Scripted:
    """The scripted server, reset for this test."""
    _scripted_server.reset()
    return _scripted_server


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def api_key() -> str:
    """The API key the client tests use (a value that must never be shown)."""
    return API_KEY


@pytest.fixture(params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each client test runs over both transports."""
    return request.param
