"""Sandbox test fixtures: valid bodies per message type, and sessions on a shared sandbox
(the helpers they use are in ``tests/sandbox/support.py``).

Most tests need no special settings: they get ``live``, their own connected session on a
sandbox and webhook sink shared by the whole test module (starting and stopping uvicorn
costs tenths of a second). Tests that change settings use ``make_sandbox`` instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.sandbox import SandboxConfig
from scheduler.sandbox.testing import QUIET_SANDBOX, SandboxHandle, WebhookSink
from tests.sandbox.support import SESSION, Live, Wired, sample_bodies, unique_id


@pytest.fixture
def bodies() -> dict[str, dict[str, Any]]:
    """One valid body per message type for session ``s1``."""
    return sample_bodies()


@pytest.fixture
def wired(sandbox: Any, webhook_sink: Any) -> Wired:
    """The quiet sandbox with ``s1`` connected and posting to ``webhook_sink``."""
    sandbox.create_session(SESSION, webhook_url=webhook_sink.url)
    return Wired(sandbox, webhook_sink)


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[SandboxHandle, WebhookSink]]:
    """A quiet sandbox and a webhook sink for the whole test module."""
    box = SandboxHandle(SandboxConfig(**QUIET_SANDBOX))
    sink = WebhookSink()
    yield box, sink
    closers = [threading.Thread(target=close) for close in (box.close, sink.close)]
    for thread in closers:
        thread.start()
    for thread in closers:
        thread.join(timeout=15)


@pytest.fixture
def live(shared: tuple[SandboxHandle, WebhookSink]) -> Live:
    """A fresh connected session on the shared sandbox, with sample bodies addressed to it."""
    box, sink = shared
    session_id = unique_id("live")
    box.create_session(session_id, webhook_url=sink.url)
    return Live(box, sink, session_id, len(box.state.world.sends), sample_bodies(session_id))
