"""Helpers of the campaign tests: label events stored in a ledger as the receiver stores
them (the label state a label-filtered campaign is planned from)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords

CTX = ApplyContext(OptOutWords(["SAIR"]))


def label_event(kind: str, data: dict[str, Any], when: datetime, *, full: bool = False,
                session: str = "s1") -> dict[str, Any]:
    """A label event as the service sends it (``appstate.label.*`` when ``full``);
    ``kind``: ``edit``, ``association.chat`` or ``association.message``."""
    name = f"appstate.label.{kind}" if full else f"labels.{kind}"
    body = {**data, "ts": int(when.timestamp() * 1000)}
    if full:
        body["from_full_sync"] = True
    stamp = when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"event": name, "sessionId": session, "timestamp": stamp, "data": body}


def store_events(ledger: Ledger, events: list[dict[str, Any]], now: datetime,
                 batch: int = 1) -> None:
    """Store and apply ``events`` as the receiver does, ``batch`` per transaction."""
    items = [incoming_from(e, json.dumps(e), now) for e in events]
    for start in range(0, len(items), batch):
        store_and_apply(TrackingStore(ledger), items[start:start + batch], CTX, now)
