"""Delivery tracking: the webhook receiver, correlation with deliveries, replies, opt-outs.

- :func:`create_receiver` / :func:`start_receiver`: the FastAPI receiver (stores every
  event first, then applies it to the ledger);
- :func:`session_webhook_url`: the URL to register on each sender (with ``?token=``);
- :func:`tracking_counts`: sent / delivered / read / replied / opted out of a run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Re-exported lazily (PEP 562): importing one module of the package (``tracking.answers``
# for ``campaign status``) does not import the receiver and its FastAPI.
if TYPE_CHECKING:
    from scheduler.tracking.counts import stored_events, tracking_counts
    from scheduler.tracking.receiver import create_receiver, start_receiver
    from scheduler.tracking.urls import account_webhook_url, receiver_token, session_webhook_url

_EXPORTS = {"stored_events": "counts", "tracking_counts": "counts",
            "create_receiver": "receiver", "start_receiver": "receiver",
            "account_webhook_url": "urls", "receiver_token": "urls",
            "session_webhook_url": "urls"}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module when first asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = [
    "account_webhook_url",
    "create_receiver",
    "receiver_token",
    "session_webhook_url",
    "start_receiver",
    "stored_events",
    "tracking_counts",
]
