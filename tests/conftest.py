"""Fixtures shared by every test folder: a real sandbox and a real webhook sink on loopback.

- ``sandbox``: a fresh sandbox (seed 1, no faults, silent recipients) served by uvicorn;
  a :class:`~scheduler.sandbox.testing.SandboxHandle` (``base_url``, ``api_key``, ``app``,
  ``state``, ``sends()``, ``scan()``, ``set_faults()``, ``create_session()``, ``send()`` ...).
- ``make_sandbox(**config)``: the same with settings changed (all stopped after the test).
- ``webhook_sink``: a :class:`~scheduler.sandbox.testing.WebhookSink` that records every JSON
  POSTed to it (``url``, ``events``, ``wait_for(predicate, count, timeout)``).

Servers of one test are stopped in parallel at its end. Area-specific fixtures belong in
each folder's own ``conftest.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings

from scheduler.sandbox import SandboxConfig
from scheduler.sandbox.testing import QUIET_SANDBOX, SandboxHandle, WebhookSink

# Property tests check behaviour, not speed: no per-example deadline (a loaded CI machine
# would otherwise fail them at random).
settings.register_profile("project", deadline=None)
settings.load_profile("project")


class ServerReaper:
    """Stops servers in parallel (each uvicorn takes a few tenths of a second to stop)."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def stop(self, close: Callable[[], None]) -> None:
        """Start ``close()`` in a thread; :meth:`join` waits for all of them."""
        thread = threading.Thread(target=close, name="server-reaper", daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self) -> None:
        """Wait until every server given to :meth:`stop` has stopped."""
        for thread in self._threads:
            thread.join(timeout=15)


@pytest.fixture
def server_reaper() -> Iterator[ServerReaper]:
    """Collects the servers of one test and stops them together after it."""
    reaper = ServerReaper()
    yield reaper
    reaper.join()


@pytest.fixture
def make_sandbox(server_reaper: ServerReaper) -> Iterator[Callable[..., SandboxHandle]]:
    """Factory: ``make_sandbox(**config)`` starts a sandbox (``QUIET_SANDBOX`` + ``config``)."""
    handles: list[SandboxHandle] = []

    def start(**config: Any) -> SandboxHandle:
        handle = SandboxHandle(SandboxConfig(**{**QUIET_SANDBOX, **config}))
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        server_reaper.stop(handle.close)


@pytest.fixture
def sandbox(make_sandbox: Callable[..., SandboxHandle]) -> SandboxHandle:
    """A fresh sandbox with the quiet test settings, served on a free loopback port."""
    return make_sandbox()


@pytest.fixture
def webhook_sink(server_reaper: ServerReaper) -> Iterator[WebhookSink]:
    """A real webhook receiver; ``.url`` to register, ``.wait_for(...)`` to poll its events."""
    sink = WebhookSink()
    yield sink
    server_reaper.stop(sink.close)
