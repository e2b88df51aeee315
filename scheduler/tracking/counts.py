"""Read side of tracking: a run's funnel and the stored events (for status and the CLI)."""

from __future__ import annotations

import json
from typing import Any

from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_reads import TrackingReads


def tracking_counts(ledger: Ledger, run_id: int) -> dict[str, int]:
    """``{sent, delivered, read, replied, opted_out}`` of a run (each includes the next:
    a read message was also delivered and sent; opted out counts numbers)."""
    return TrackingReads(ledger.engine).funnel(run_id)


def stored_events(ledger: Ledger, *, run_id: int | None = None, after_id: int = 0,
                  last: int | None = None) -> list[dict[str, Any]]:
    """Stored events, oldest first (only the newest ``last`` when given)."""
    return TrackingReads(ledger.engine).events(run_id, after_id, last)


def event_json(row: dict[str, Any]) -> dict[str, Any]:
    """A stored event as JSON-ready data, its payload decoded."""
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()
           if k not in ("payload", "dedupe_key")}
    try:
        out["payload"] = json.loads(row.get("payload") or "null")
    except ValueError:
        out["payload"] = row.get("payload")
    return out
