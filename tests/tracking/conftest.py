"""Tracking test harness: a real receiver on loopback over a real ledger.

- ``tledger``: a fresh ledger (SQLite file, or PostgreSQL on that pass) on the real clock
  (the receiver stamps arrivals with it);
- ``make_receiver(ledger, **settings)``: serves ``create_receiver`` with uvicorn on a free
  port; returns a :class:`~tests.tracking.support.ReceiverHandle` (``post``,
  ``post_account``, ``post_raw`` ...).

Event builders and run helpers are in ``tests/tracking/support.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scheduler.core.httpserver import BackgroundServer
from scheduler.ledger.runs import Ledger
from scheduler.tracking import create_receiver
from tests.factories import open_test_ledger
from tests.tracking.support import ReceiverHandle, settings


@pytest.fixture
def tledger(ledger_url: str) -> Iterator[Ledger]:
    """A fresh ledger (SQLite file, or PostgreSQL on that pass) on the real clock."""
    with open_test_ledger(ledger_url) as opened:
        yield opened


@pytest.fixture
def make_receiver() -> Iterator[Callable[..., ReceiverHandle]]:
    """Factory: ``make_receiver(ledger, client=None, **settings)``; stopped after the test."""
    handles: list[ReceiverHandle] = []

    def start(ledger: Ledger, *, client: Any = None, sweep_every_s: float = 0.05,
              **overrides: Any) -> ReceiverHandle:
        config = settings(**overrides)
        app = create_receiver(config, ledger, client=client, sweep_every_s=sweep_every_s)
        handle = ReceiverHandle(BackgroundServer(app).start(), config)
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        handle.close()
