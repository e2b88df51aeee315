"""Delivery tracking: the webhook receiver, correlation with deliveries, replies, opt-outs.

- :func:`create_receiver` / :func:`start_receiver`: the FastAPI receiver (stores every
  event first, then applies it to the ledger);
- :func:`session_webhook_url`: the URL to register on each sender (with ``?token=``);
- :func:`tracking_counts`: sent / delivered / read / replied / opted out of a run.
"""

from __future__ import annotations

from scheduler.tracking.counts import stored_events, tracking_counts
from scheduler.tracking.receiver import create_receiver, start_receiver
from scheduler.tracking.urls import account_webhook_url, receiver_token, session_webhook_url

__all__ = [
    "account_webhook_url",
    "create_receiver",
    "receiver_token",
    "session_webhook_url",
    "start_receiver",
    "stored_events",
    "tracking_counts",
]
