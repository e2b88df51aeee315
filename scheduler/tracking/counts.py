"""Read side of tracking: a run's funnel and the stored events (for status and the CLI)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from scheduler.ledger import queries
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.runs import Ledger


def tracking_counts(ledger: Ledger, run_id: int) -> dict[str, int]:
    """``{sent, delivered, read, replied, opted_out}`` of a run (each includes the next)."""
    try:
        with ledger.engine.connect() as conn:
            return queries.tracking_counts(conn, run_id)
    except SQLAlchemyError as exc:
        raise LedgerError(f"could not count the events of run {run_id}: {exc}") from None


def stored_events(ledger: Ledger, *, run_id: int | None = None, after_id: int = 0,
                  last: int | None = None) -> list[dict[str, Any]]:
    """Stored events, oldest first (only the newest ``last`` when given)."""
    try:
        with ledger.engine.connect() as conn:
            return queries.run_events(conn, run_id=run_id, after_id=after_id, last=last)
    except SQLAlchemyError as exc:
        raise LedgerError(f"could not read the stored events: {exc}") from None


def event_json(row: dict[str, Any]) -> dict[str, Any]:
    """A stored event as JSON-ready data, its payload decoded."""
    out = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()
           if k not in ("payload", "dedupe_key")}
    try:
        out["payload"] = json.loads(row.get("payload") or "null")
    except ValueError:
        out["payload"] = row.get("payload")
    return out
