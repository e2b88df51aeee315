"""Store events and apply them, one transaction per batch (the receiver's only writes).

:func:`store_and_apply` inserts the raw events (a ``dedupe_key`` already stored is a no-op),
then applies the new ones in the same transaction: when it commits, the event is both
durable and applied. If anything fails (a bug, a bad row), the transaction is rolled back
and the batch is stored again with each event applied alone in a savepoint; one that still
fails stays stored with ``applied_at`` NULL and its error as ``result``, to be applied
again by :func:`apply_unapplied` at the next start. Database errors (SQLAlchemy's, and the
driver's on the SQLite fast path) become :class:`~scheduler.ledger.exceptions.LedgerError`
in the ledger's scopes (:mod:`scheduler.ledger.access`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from scheduler.ledger.access import Connection, Engine, read, savepoint, transaction
from scheduler.ledger.queries import common as cq
from scheduler.ledger.queries import events as eq
from scheduler.ledger.rows import UnmatchedEvent
from scheduler.tracking.apply import Applied, ApplyContext
from scheduler.tracking.intake import Incoming
from scheduler.tracking.matching import MATCHED_EVENTS, apply_and_match
from scheduler.tracking.reload import load_stored

logger = logging.getLogger("scheduler.tracking")
T = TypeVar("T")


@dataclass
class Ingested:
    """Outcome of one batch: per event its stored id and whether it was a repeat."""

    ids: list[int | None] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    applied: Applied = field(default_factory=Applied)


def _apply(conn: Connection, batch: list[tuple[int, Incoming]], ctx: ApplyContext,
           now: datetime, *, careful: bool) -> tuple[Applied, dict[int, str]]:
    """Apply a batch; ``careful``: event by event in savepoints. Returns (applied, errors)."""
    if not careful:
        return apply_and_match(conn, batch, ctx, now), {}
    applied, errors = Applied(), {}
    for event_id, item in batch:
        try:
            with savepoint(conn):
                applied.merge(apply_and_match(conn, [(event_id, item)], ctx, now))
        except Exception as exc:
            logger.exception("event %s (%s) could not be applied", event_id, item.name)
            errors[event_id] = f"error: {type(exc).__name__}: {exc}"[:500]
    return applied, errors


def _finish(conn: Connection, applied: Applied, errors: dict[int, str],
            now: datetime) -> None:
    eq.mark_events_applied(conn, sorted(applied.results.items()), now)
    for event_id, why in errors.items():
        eq.note_event_result(conn, event_id, why)


def _twice(attempt: Callable[[bool], T], what: str) -> T:
    """``attempt(careful=False)``; if anything fails, all is rolled back and it is tried
    again carefully (one event per savepoint); a second failure is raised (a database error
    as ``LedgerError``, by the attempt's scope)."""
    try:
        return attempt(False)
    except Exception as exc:
        logger.warning("%s failed (%s: %s); trying again event by event", what,
                       type(exc).__name__, exc)
        return attempt(True)


def store_and_apply(engine: Engine, items: Sequence[Incoming], ctx: ApplyContext,
                    now: datetime) -> Ingested:
    """Store ``items`` and apply the new ones, all in one transaction (one commit)."""
    rows: dict[str, dict] = {}
    for item in items:
        rows.setdefault(item.dedupe_key, item.row())

    def attempt(careful: bool) -> Ingested:
        out = Ingested()
        with transaction(engine, "store events") as conn:
            cq.lock_matching(conn)
            new = eq.insert_events(conn, list(rows.values()))
            fresh: list[tuple[int, Incoming]] = []
            for item in items:
                event_id = new.pop(item.dedupe_key, None)
                out.ids.append(event_id)
                out.duplicate.append(event_id is None)
                if event_id is not None:
                    fresh.append((event_id, item))
            if fresh:
                applied, errors = _apply(conn, fresh, ctx, now, careful=careful)
                _finish(conn, applied, errors, now)
                out.applied = applied
        return out

    return _twice(attempt, "store events")


def reapply(engine: Engine, event_ids: Sequence[int], ctx: ApplyContext,
            now: datetime) -> Applied:
    """Apply stored events again (recovery); their results are updated."""

    def attempt(careful: bool) -> Applied:
        with transaction(engine, "apply stored events") as conn:
            cq.lock_matching(conn)
            loaded, _ = load_stored(conn, eq.event_payloads(conn, list(event_ids)), now)
            applied, errors = _apply(conn, loaded, ctx, now, careful=careful)
            _finish(conn, applied, errors, now)
            return applied

    return _twice(attempt, "apply stored events")


def apply_unapplied(engine: Engine, ctx: ApplyContext, now: datetime, *,
                    batch: int = 500) -> tuple[int, Applied]:
    """At start-up: apply every stored event whose ``applied_at`` is NULL (oldest first)."""
    total, after, everything = 0, 0, Applied()
    while True:
        with read(engine, "read the events left unapplied") as conn:
            rows = eq.unapplied_events(conn, after_id=after, limit=batch)
        if not rows:
            return total, everything
        after = rows[-1].id
        everything.merge(reapply(engine, [r.id for r in rows], ctx, now))
        total += len(rows)


def pending_unmatched(engine: Engine, *, window: int = 100_000) -> list[UnmatchedEvent]:
    """Unmatched sends and receipts among the last ``window`` events, to retry after a
    restart (a ``messages.sent`` left unmatched by an older version included)."""
    with read(engine, "read stored events") as conn:
        newest = eq.max_event_id(conn)
        return eq.recent_unmatched_events(conn, since_id=max(newest - window, 0),
                                          names=MATCHED_EVENTS)


def note_result(engine: Engine, event_id: int, result: str) -> None:
    """Replace an event's result (after its call was rejected, or not)."""
    with transaction(engine, f"note the result of event {event_id}") as conn:
        eq.note_event_result(conn, event_id, result)
